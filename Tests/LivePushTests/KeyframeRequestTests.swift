@testable import LivePush
import Testing

/// The storm protection of keyframes on request (`KeyframeRequests`), on a clock the test sets.
@Suite(.timeLimit(.minutes(10))) struct KeyframeRequestTests {
    private let ms: UInt64 = 1_000_000

    @Test func aRequestForcesTheNextPictureOnceAndIsCounted() {
        let requests = KeyframeRequests()
        #expect(requests.request(nowNs: 5000 * ms) == .forced(followUpMs: nil))
        #expect(requests.takeDue(nowNs: 5010 * ms))
        #expect(!requests.takeDue(nowNs: 5043 * ms), "one picture, not every one after")
        #expect(requests.forcedCount == 1)
    }

    @Test func atMostOneForcedKeyframePerSecond() {
        let requests = KeyframeRequests()
        #expect(requests.request(nowNs: 5000 * ms).isForced)
        #expect(requests.takeDue(nowNs: 5010 * ms))
        requests.keyframeEncoded(nowNs: 5020 * ms)
        #expect(requests.request(nowNs: 5600 * ms) == .tooSoon(sinceMs: 600))
        #expect(!requests.takeDue(nowNs: 5610 * ms))
        #expect(requests.request(nowNs: 6000 * ms).isForced, "1000 ms after the last forced one")
        #expect(requests.takeDue(nowNs: 6010 * ms))
        #expect(requests.forcedCount == 2)
    }

    @Test func noneWhenAKeyframeWentOutUnder300MillisecondsAgo() {
        let requests = KeyframeRequests()
        requests.keyframeEncoded(nowNs: 2000 * ms)  // a natural keyframe (the GOP)
        #expect(requests.request(nowNs: 2299 * ms) == .recentKeyframe(ageMs: 299))
        #expect(!requests.takeDue(nowNs: 2300 * ms))
        #expect(requests.request(nowNs: 2300 * ms).isForced)
        #expect(requests.forcedCount == 0, "counted when the pipeline takes it")
    }

    @Test func aFollowUpComesDueItsDelayAfterTheFirst() {
        let requests = KeyframeRequests()
        #expect(requests.request(nowNs: 1000 * ms, followUpMs: 1500) == .forced(followUpMs: 1500))
        #expect(requests.takeDue(nowNs: 1010 * ms))
        #expect(!requests.takeDue(nowNs: 2499 * ms))
        #expect(requests.takeDue(nowNs: 2500 * ms))
        #expect(!requests.takeDue(nowNs: 2533 * ms))
        #expect(requests.forcedCount == 2)
    }

    @Test func theResultSaysWhyNoneWasForced() {
        #expect(KeyframeRequestResult.tooSoon(sinceMs: 600).explanation
                == "none forced: one was forced 600 ms ago (at most one per 1000 ms)")
        #expect(KeyframeRequestResult.recentKeyframe(ageMs: 120).explanation
                == "none forced: a keyframe went out 120 ms ago (under 300 ms)")
        #expect(KeyframeRequestResult.noVideo.explanation == "the broadcast has no video yet (screen capture is not running)")
    }
}
