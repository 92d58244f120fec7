import Testing
@testable import AudioCapture

/// The capture timeline moves for a lasting disagreement with the buffers' estimates (a dropout),
/// never for one late callback, so load cannot ratchet the microphone later and later.
@Suite(.timeLimit(.minutes(10))) struct CaptureTimelineTests {
    static let rateHz = 48000
    static let bufferFrames: UInt64 = 1024
    /// When buffer `index`'s first frame was really captured (sample-exact, as the timeline counts).
    static func trueNs(_ index: Int) -> UInt64 {
        1_000_000_000 + CaptureTimeline.durationNs(frames: UInt64(index) * bufferFrames, rateHz: rateHz)
    }
    static let thresholdNs: UInt64 = 30_000_000

    /// Feeds `count` buffers whose estimates are their true times plus `lateNs(index)`, delivering
    /// every frame; returns the pts of each buffer's first frame.
    private func run(_ timeline: inout CaptureTimeline, from start: Int = 0, count: Int,
                     lateNs: (Int) -> UInt64) -> [UInt64] {
        (start..<(start + count)).map { index in
            _ = timeline.observe(measuredNs: Self.trueNs(index) + lateNs(index), pendingFrames: 0, rateHz: Self.rateHz,
                                 thresholdNs: Self.thresholdNs)
            return timeline.deliver(frames: Int(Self.bufferFrames), rateHz: Self.rateHz)
        }
    }

    @Test func lateCallbacksNowAndThenDoNotMoveTheTimeline() {
        var timeline = CaptureTimeline()
        // Every fifth callback runs 40 ms late (a busy machine); the rest are on time.
        let pts = run(&timeline, count: 500) { $0 % 5 == 4 ? 40_000_000 : 0 }
        for (index, ptsNs) in pts.enumerated() {
            #expect(ptsNs == Self.trueNs(index), "buffer \(index) moved")
        }
    }

    @Test func twoLateCallbacksInARowDoNotMoveItEither() {
        var timeline = CaptureTimeline()
        let pts = run(&timeline, count: 100) { $0 % 10 == 8 || $0 % 10 == 9 ? 60_000_000 : 0 }
        #expect(pts.last == Self.trueNs(99))
    }

    @Test func aDropoutMovesTheTimelineByTheSmallestLastingDisagreement() {
        var timeline = CaptureTimeline()
        _ = run(&timeline, count: 10) { _ in 0 }
        // 100 ms of samples lost: from buffer 10 on every estimate is 100 ms later, some more.
        let after = run(&timeline, from: 10, count: 10) { index in index == 10 ? 130_000_000 : 100_000_000 }
        // The first CaptureTimeline.confirmations - 1 buffers still follow the old timeline...
        #expect(after[0] == Self.trueNs(10))
        #expect(after[1] == Self.trueNs(11))
        // ...then it moves by the smallest of the lasting disagreements, 100 ms, not the 130.
        for index in 2..<after.count {
            #expect(after[index] == Self.trueNs(10 + index) + 100_000_000, "buffer \(10 + index)")
        }
    }

    @Test func ptsNeverGoBack() {
        var timeline = CaptureTimeline()
        _ = run(&timeline, count: 10) { _ in 0 }
        // The estimates now say the samples are 200 ms earlier than the timeline: it cannot go back.
        var last: UInt64 = 0
        for index in 10..<30 {
            _ = timeline.observe(measuredNs: Self.trueNs(index) - 200_000_000, pendingFrames: 0, rateHz: Self.rateHz,
                                 thresholdNs: Self.thresholdNs)
            let pts = timeline.deliver(frames: Int(Self.bufferFrames), rateHz: Self.rateHz)
            #expect(pts >= last)
            last = pts + CaptureTimeline.durationNs(frames: Self.bufferFrames, rateHz: Self.rateHz)
        }
    }
}
