@testable import LivePush
import Testing

/// Which frames an SEI message goes into: its repeats, its delay, keyframes only.
@Suite(.timeLimit(.minutes(10))) struct SEIMessageQueueTests {
    private let msNs: UInt64 = 1_000_000

    /// The texts each of `frames` frames carries (one every 33 ms from `startNs`; `keyframes` are keyframes).
    private func run(_ queue: inout SEIMessageQueue, frames: Int, keyframes: Set<Int> = [], startNs: UInt64 = 0) -> [[String]] {
        (0..<frames).map { index in
            queue.take(nowNs: startNs + UInt64(index) * 33 * msNs, isKeyframe: keyframes.contains(index)).map {
                #expect(Array($0.prefix(16)) == LivePushSEI.uuid)
                return String(decoding: $0.dropFirst(16), as: UTF8.self)
            }
        }
    }

    @Test func aMessageGoesIntoItsRepeatCountOfConsecutiveFrames() {
        var queue = SEIMessageQueue()
        queue.add(text: "a", repeatCount: 3, delayMs: 0, keyFrameOnly: false, nowNs: 0)
        #expect(run(&queue, frames: 5) == [["a"], ["a"], ["a"], [], []])
        #expect(queue.messages.isEmpty)
    }

    @Test func aDelayedMessageStartsWithTheFirstFrameAfterItsDelay() {
        var queue = SEIMessageQueue()
        queue.add(text: "now", repeatCount: 1, delayMs: 0, keyFrameOnly: false, nowNs: 0)
        queue.add(text: "later", repeatCount: 2, delayMs: 100, keyFrameOnly: false, nowNs: 0)
        // Frames at 0, 33, 66, 99, 132, 165 ms: "later" is due at 100 ms.
        #expect(run(&queue, frames: 6) == [["now"], [], [], [], ["later"], ["later"]])
    }

    @Test func aKeyframeOnlyMessageSkipsOtherFramesAndWantsTheNextKeyframe() {
        var queue = SEIMessageQueue()
        queue.add(text: "k", repeatCount: 2, delayMs: 0, keyFrameOnly: true, nowNs: 0)
        queue.add(text: "p", repeatCount: 2, delayMs: 0, keyFrameOnly: false, nowNs: 0)
        #expect(run(&queue, frames: 8, keyframes: [3, 6]) == [["p"], ["p"], [], ["k"], [], [], ["k"], []])
        #expect(queue.messages.isEmpty)
    }

    @Test func aKeyframeOnlyMessageAsksForAKeyframeAtOnceThenAGOPApart() {
        var queue = SEIMessageQueue()
        queue.add(text: "k", repeatCount: 2, delayMs: 100, keyFrameOnly: true, nowNs: 0)
        #expect(!queue.wantsKeyframe(nowNs: 99_000_000, gopFrames: 4), "not before its delay")
        var asked: [Int] = []
        for index in 0..<12 {
            let nowNs = 100_000_000 + UInt64(index) * 33_000_000
            let keyframe = queue.wantsKeyframe(nowNs: nowNs, gopFrames: 4)
            if keyframe { asked.append(index) }
            _ = queue.take(nowNs: nowNs, isKeyframe: keyframe)
        }
        #expect(asked == [0, 4], "a keyframe at once, the repeat one GOP (4 frames) later: \(asked)")
        #expect(queue.messages.isEmpty)
    }

    @Test func badMessagesAreRefusedWithTheReason() {
        #expect(LivePushSEI.problem(text: "", repeatCount: 1, delayMs: 0)?.contains("empty") == true)
        #expect(LivePushSEI.problem(text: String(repeating: "x", count: 4097), repeatCount: 1, delayMs: 0)?
            .contains("4097 bytes") == true)
        #expect(LivePushSEI.problem(text: "x", repeatCount: 0, delayMs: 0)?.contains("repeat count 0") == true)
        #expect(LivePushSEI.problem(text: "x", repeatCount: 1, delayMs: -1)?.contains("delay -1 ms") == true)
        #expect(LivePushSEI.problem(text: "x", repeatCount: 1000, delayMs: 600_000) == nil)
    }
}
