/// Automatic bitrate: lowers the video encoder's bitrate toward what the network carries when
/// a destination's send queue builds up, never under the minimum, and steps back up toward
/// the target once every queue has stayed short for a while. Without auto bitrate it only
/// follows `setTarget`. Called once a second with each publishing destination's figures.
struct BitrateController {
    private(set) var targetKbps: Int
    private(set) var minKbps: Int
    private(set) var currentKbps: Int
    let initialKbps: Int
    let enabled: Bool
    private(set) var lastChangeWasDown = false
    /// Consecutive calls with every queue short.
    private var calmSeconds = 0
    /// Whether the last call found a destination congested: a raised target is then climbed to in
    /// steps, as the network allows; otherwise it is taken at once.
    private var congestedNow = false

    /// A queue longer than this (ms) means the network is not keeping up.
    static let congestedQueueMs = 500
    /// Every queue shorter than this (ms) for `calmSecondsBeforeStepUp` calls: room to grow.
    static let calmQueueMs = 200
    static let calmSecondsBeforeStepUp = 3
    /// SRT: more packets lost than this (percent of those sent) means the path is too slow. SRT
    /// keeps its send buffer near latency + RTT (the receiver acknowledges what it gave up on),
    /// so on a slow path loss grows where a TCP queue would.
    static let congestedLossPercent = 10
    /// SRT: less loss than this counts as calm.
    static let calmLossPercent = 2

    struct Destination {
        var queuedMs: Int
        var sendRateKbps: Int
        /// Packets lost in percent of those sent (SRT; 0 for RTMP, where TCP hides loss).
        var lossPercent = 0

        /// What reached the receiver: all that was sent over TCP; SRT's send rate less its losses.
        var carriedKbps: Int { sendRateKbps * (100 - min(100, lossPercent)) / 100 }

        var isCongested: Bool {
            queuedMs > BitrateController.congestedQueueMs || lossPercent > BitrateController.congestedLossPercent
        }
        var isCalm: Bool { queuedMs < BitrateController.calmQueueMs && lossPercent < BitrateController.calmLossPercent }
    }

    init(targetKbps: Int, minKbps: Int, currentKbps: Int, enabled: Bool) {
        self.targetKbps = targetKbps
        self.minKbps = minKbps
        self.currentKbps = currentKbps
        initialKbps = currentKbps
        self.enabled = enabled
    }

    /// The new encoder bitrate, or nil to keep it.
    mutating func update(destinations: [Destination], audioKbps: Int) -> Int? {
        guard enabled else { return nil }
        let congested = destinations.filter(\.isCongested)
        congestedNow = !congested.isEmpty
        if !congested.isEmpty {
            calmSeconds = 0
            // What the slowest congested destination carried, less audio and a fifth so the
            // queue drains; at most a halving per second (one bad measurement cannot sink it),
            // never under the minimum. At or under that already: hold while the queue drains.
            let carriedKbps = congested.map(\.carriedKbps).min() ?? 0
            let fitKbps = (carriedKbps - audioKbps) * 8 / 10
            guard currentKbps > fitKbps else { return nil }
            let next = max(minKbps, currentKbps / 2, fitKbps)
            return change(to: next)
        }
        if destinations.allSatisfy(\.isCalm) {
            calmSeconds += 1
            if calmSeconds >= Self.calmSecondsBeforeStepUp && currentKbps < targetKbps {
                calmSeconds = 0
                // Up by a tenth of the target a step: from the minimum to the target in about 30 s.
                return change(to: min(targetKbps, currentKbps + max(50, targetKbps / 10)))
            }
        } else {
            calmSeconds = 0
        }
        return nil
    }

    /// Nothing is pushed (a recording alone, or capture before the push): no network to adapt to,
    /// so the target at once. The new bitrate, or nil when it is there already.
    mutating func nothingPushed() -> Int? {
        calmSeconds = 0
        return change(to: targetKbps)
    }

    /// Back to the initial bitrate (restartPush); the new bitrate, or nil when it is there already.
    mutating func restart() -> Int? {
        calmSeconds = 0
        return change(to: initialKbps)
    }

    /// An explicit target (`setTargetVideoBitrate`, `ctl bitrate`): taken at once, unless auto bitrate
    /// is on and the network is congested now, when a higher one is climbed to in steps.
    mutating func setTarget(_ kbps: Int) -> Int? {
        targetKbps = kbps
        if !enabled || currentKbps > kbps || !congestedNow {
            calmSeconds = 0
            return change(to: kbps)
        }
        return nil
    }

    mutating func setMin(_ kbps: Int) -> Int? {
        minKbps = kbps
        return currentKbps < kbps ? change(to: kbps) : nil
    }

    private mutating func change(to kbps: Int) -> Int? {
        guard kbps != currentKbps else { return nil }
        lastChangeWasDown = kbps < currentKbps
        currentKbps = kbps
        return kbps
    }
}
