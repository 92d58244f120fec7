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

    @Test func atMostOneForcedKeyframePerSecondAndTheRequestsBetweenShareTheNext() {
        let requests = KeyframeRequests()
        #expect(requests.request(nowNs: 5000 * ms).isForced)
        #expect(requests.takeDue(nowNs: 5010 * ms))
        requests.keyframeEncoded(nowNs: 5020 * ms)
        #expect(requests.request(nowNs: 5600 * ms) == .deferred(inMs: 400, followUpMs: nil))
        #expect(requests.request(nowNs: 5800 * ms) == .deferred(inMs: 200, followUpMs: nil))
        #expect(!requests.takeDue(nowNs: 5610 * ms))
        #expect(!requests.takeDue(nowNs: 5999 * ms))
        #expect(requests.takeDue(nowNs: 6000 * ms), "1000 ms after the last forced one, once for both")
        #expect(!requests.takeDue(nowNs: 6033 * ms))
        #expect(requests.forcedCount == 2)
        requests.keyframeEncoded(nowNs: 6040 * ms)
        #expect(requests.request(nowNs: 7100 * ms) == .forced(followUpMs: nil))
    }

    @Test func noneWhenAKeyframeWentOutUnder40MillisecondsAgo() {
        let requests = KeyframeRequests()
        requests.keyframeEncoded(nowNs: 2000 * ms)  // a natural keyframe (the GOP)
        #expect(requests.request(nowNs: 2039 * ms) == .recentKeyframe(ageMs: 39, followUpMs: nil))
        #expect(!requests.takeDue(nowNs: 2040 * ms))
        #expect(requests.request(nowNs: 2040 * ms).isForced)
        #expect(requests.forcedCount == 0, "counted when the pipeline takes it")
    }

    @Test func aFollowUpComesDueItsDelayAfterTheFirstEvenWhenTheFirstWasNotNeeded() {
        let requests = KeyframeRequests()
        #expect(requests.request(nowNs: 1000 * ms, followUpMs: 1500) == .forced(followUpMs: 1500))
        #expect(requests.takeDue(nowNs: 1010 * ms))
        #expect(!requests.takeDue(nowNs: 2499 * ms))
        #expect(requests.takeDue(nowNs: 2500 * ms))
        #expect(!requests.takeDue(nowNs: 2533 * ms))
        #expect(requests.forcedCount == 2)
        requests.keyframeEncoded(nowNs: 9000 * ms)
        #expect(requests.request(nowNs: 9010 * ms, followUpMs: 1500) == .recentKeyframe(ageMs: 10, followUpMs: 1500))
        #expect(!requests.takeDue(nowNs: 9020 * ms))
        #expect(requests.takeDue(nowNs: 10510 * ms))
        #expect(requests.forcedCount == 3)
    }

    @Test func theResultSaysWhatHappens() {
        #expect(KeyframeRequestResult.deferred(inMs: 400, followUpMs: nil).explanation
                == "a keyframe in 400 ms (at most one per 1000 ms)")
        #expect(KeyframeRequestResult.recentKeyframe(ageMs: 12, followUpMs: nil).explanation
                == "none forced now: a keyframe went out 12 ms ago (under 40 ms)")
        #expect(KeyframeRequestResult.forced(followUpMs: 1500).explanation
                == "the next picture is a keyframe, and another one 1500 ms after it")
        #expect(KeyframeRequestResult.noVideo.explanation == "the broadcast has no video yet (screen capture is not running)")
    }
}
