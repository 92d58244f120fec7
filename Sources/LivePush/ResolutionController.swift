/// Adaptive resolution (`LivePushConfig.enableAutoResolution`): decides, once a second, the size
/// the video is encoded at. When auto bitrate has already gone down to the minimum and a
/// destination is still congested for `downAfterSeconds`, the size steps down one rung of the
/// ladder (the configured size, then 720p, 540p and 360p at its aspect ratio); once every queue
/// has stayed short for `upAfterSeconds` and the bitrate has started to climb again (the network
/// has room), it steps back up one rung. After any step it waits `holdSeconds` so the new size
/// can show what it does before the next decision.
struct ResolutionController {
    struct Size: Equatable, Sendable, CustomStringConvertible {
        var width: Int
        var height: Int
        var description: String { "\(width)x\(height)" }
    }

    /// The rungs, largest first: the configured size and every preset height under it.
    let ladder: [Size]
    private(set) var rung = 0
    private var congestedSeconds = 0
    private var calmSeconds = 0
    private var holdSecondsLeft = 0

    static let presetHeights = [1080, 720, 540, 360]
    static let downAfterSeconds = 3
    static let upAfterSeconds = 5
    static let holdSeconds = 4

    init(width: Int, height: Int) {
        var ladder = [Size(width: width, height: height)]
        for presetHeight in Self.presetHeights where presetHeight < height {
            // The configured aspect ratio, even sizes (H.264 4:2:0).
            let presetWidth = (width * presetHeight / height + 1) & ~1
            ladder.append(Size(width: presetWidth, height: presetHeight))
        }
        self.ladder = ladder
    }

    var size: Size { ladder[rung] }

    /// One second's figures: whether a destination is congested and whether all are calm, the
    /// encoder's bitrate and auto bitrate's minimum. The new size, or nil to keep it.
    mutating func update(congested: Bool, calm: Bool, bitrateKbps: Int, minKbps: Int) -> Size? {
        if holdSecondsLeft > 0 {
            holdSecondsLeft -= 1
            return nil
        }
        congestedSeconds = congested && bitrateKbps <= minKbps ? congestedSeconds + 1 : 0
        calmSeconds = calm && !congested ? calmSeconds + 1 : 0
        if congestedSeconds >= Self.downAfterSeconds && rung + 1 < ladder.count {
            return step(by: 1)
        }
        if calmSeconds >= Self.upAfterSeconds && rung > 0 && bitrateKbps > minKbps {
            return step(by: -1)
        }
        return nil
    }

    private mutating func step(by delta: Int) -> Size {
        rung += delta
        congestedSeconds = 0
        calmSeconds = 0
        holdSecondsLeft = Self.holdSeconds
        return ladder[rung]
    }
}
