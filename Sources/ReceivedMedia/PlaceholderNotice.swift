/// The notice the pusher writes on a placeholder that has no image of its own ("Poor network",
/// "Screen capture interrupted", "Paused": `VideoFrame.drawNotice`) in what a receiver got: a
/// black band across the middle of the picture, a twentieth of its height, with white text in
/// it. A screen picture without the band (a uniform one, dark or bright) is not the notice.
public struct PlaceholderNotice: Sendable {
    /// Luma at or under which a pixel of the band is black (the band is drawn at 16).
    public var bandLuma: UInt8 = 40
    /// Luma at or above which a pixel of the band is text (drawn at 235).
    public var textLuma: UInt8 = 170
    /// The least share of the band that is black, and the least that is text.
    public var minBandShare = 0.6
    public var minTextShare = 0.01

    public init() {}

    /// The band's rows in a picture of `height` rows: the middle twenty-fourth, inside the
    /// drawn band (the middle twentieth and a bit) whatever the scaling.
    static func bandRows(height: Int) -> Range<Int> {
        let half = max(1, height / 48)
        return (height / 2 - half)..<(height / 2 + half + 1)
    }

    /// Whether picture `index` shows the notice.
    public func isShown(_ index: Int, in pictures: ReceivedPictures) -> Bool {
        let rows = Self.bandRows(height: pictures.height)
        return pictures.share(index, rows: rows) { $0 <= bandLuma } >= minBandShare
            && pictures.share(index, rows: rows) { $0 >= textLuma } >= minTextShare
    }

    /// For each picture, whether it shows the notice.
    public func shown(in pictures: ReceivedPictures) -> [Bool] {
        (0..<pictures.count).map { isShown($0, in: pictures) }
    }
}
