/// The sample-exact timeline a capture stream's chunks follow, and when to move it.
///
/// Each buffer comes with an estimate of when its first sample was captured. A callback that
/// runs late makes one estimate late (it cannot make one early); a dropout, a lost and returned
/// source or a graph reconfiguration makes every estimate after it disagree by the same amount.
/// So the timeline moves only when the estimates have disagreed with it by more than the
/// threshold, in the same direction, for `confirmations` buffers in a row, and then by the
/// smallest of those disagreements. Re-anchoring on one late estimate instead ratchets the
/// timeline later and later under load (pts only grow, so it never came back): a 10 s run on a
/// busy machine put the microphone 500 ms behind the picture.
struct CaptureTimeline {
    /// Buffers in a row that must disagree before the timeline moves.
    static let confirmations = 3

    private(set) var anchorNs: UInt64 = 0
    /// Frames already delivered since the anchor.
    private(set) var framesSinceAnchor: UInt64 = 0
    private(set) var isAnchored = false
    /// Where the last delivered chunk ends: pts never go back.
    private var deliveredEndNs: UInt64 = 0
    private var disagreements = 0
    private var smallestDisagreementNs: Int64 = 0

    /// Forgets the anchor (a new stream or format): the next buffer anchors it.
    mutating func reset() {
        isAnchored = false
        disagreements = 0
    }

    /// Takes the estimate of a buffer's first sample, `pendingFrames` after the last delivered
    /// chunk (the partial chunk waiting to be filled). Returns true when the timeline moved: the
    /// caller drops its partial chunk, and the buffer's first sample is at `anchorNs`.
    mutating func observe(measuredNs: UInt64, pendingFrames: UInt64, rateHz: Int, thresholdNs: UInt64) -> Bool {
        guard isAnchored else {
            anchor(at: measuredNs)
            return true
        }
        let expectedNs = anchorNs + Self.durationNs(frames: framesSinceAnchor + pendingFrames, rateHz: rateHz)
        let disagreementNs = Int64(bitPattern: measuredNs &- expectedNs)
        guard disagreementNs.magnitude > thresholdNs else {
            disagreements = 0
            return false
        }
        if disagreements > 0 && (disagreementNs > 0) == (smallestDisagreementNs > 0) {
            disagreements += 1
            if disagreementNs.magnitude < smallestDisagreementNs.magnitude { smallestDisagreementNs = disagreementNs }
        } else {
            disagreements = 1
            smallestDisagreementNs = disagreementNs
        }
        guard disagreements >= Self.confirmations else { return false }
        anchor(at: UInt64(max(0, Int64(bitPattern: expectedNs) + smallestDisagreementNs)))
        return true
    }

    /// The pts of the next chunk of `frames`, which is now delivered.
    mutating func deliver(frames: Int, rateHz: Int) -> UInt64 {
        let ptsNs = anchorNs + Self.durationNs(frames: framesSinceAnchor, rateHz: rateHz)
        framesSinceAnchor += UInt64(frames)
        deliveredEndNs = anchorNs + Self.durationNs(frames: framesSinceAnchor, rateHz: rateHz)
        return ptsNs
    }

    private mutating func anchor(at ns: UInt64) {
        // Never before the end of what was delivered: samples cannot overlap earlier ones.
        anchorNs = max(ns, deliveredEndNs)
        framesSinceAnchor = 0
        isAnchored = true
        disagreements = 0
    }

    static func durationNs(frames: UInt64, rateHz: Int) -> UInt64 {
        frames * 1_000_000_000 / UInt64(rateHz)
    }
}
