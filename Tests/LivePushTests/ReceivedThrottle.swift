import Foundation
import LivePush
import Testing
import TestSupport

/// What a receiver got through a throttle and after it, as video kbps per second of stream time
/// (nginx's FLV tags, an SRT listener's MPEG-TS packets): the bitrate falls under the throttle
/// and climbs after it. Used by the RTMP, RTMPS and SRT throttle tests.
struct ReceivedThrottle {
    /// Video kbps per second of stream time, from the first second with video on.
    let kbps: [Int]
    let throttleKbps: Int
    /// The whole seconds measured under the throttle (stream time).
    let throttledSeconds: Range<Int>
    /// How far above the throttled mean the last seconds must be: a step of auto bitrate (a
    /// tenth of the target every 3 s).
    let stepKbps: Int
    /// The whole seconds measured at the end (the last one, partial, left out).
    var freedSeconds = 4

    /// Runs 10 s of stream through the throttle, frees the network (`free`), runs 12 s more and
    /// ends the push: the stretch `expectFallsAndRecovers` measures.
    static func throttleThenFree(_ pusher: LivePusher, _ helper: SignalHelper, free: () -> Void) {
        Thread.sleep(forTimeInterval: 10)  // let it run: 10 s of stream through the throttle (the seconds measured)
        free()  // the network recovers
        Thread.sleep(forTimeInterval: 12)  // let it run: 12 s after the throttle (the recovery measured)
        pusher.stopPush()
        helper.stop()
        pusher.destroy()
    }

    var throttled: ArraySlice<Int> { kbps.dropFirst(throttledSeconds.lowerBound).prefix(throttledSeconds.count) }
    var freed: ArraySlice<Int> { kbps.dropLast().suffix(freedSeconds) }
    var throttledMean: Int { throttled.reduce(0, +) / max(1, throttled.count) }
    var freedMean: Int { freed.reduce(0, +) / max(1, freed.count) }

    /// The seconds under the throttle at or under its rate; after it, a second over the throttle
    /// and the last seconds at least a step above the throttled rate.
    func expectFallsAndRecovers(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(kbps.count >= throttledSeconds.upperBound + freedSeconds + 2,
                "\(what): the receiver got \(kbps.count) s of video: \(kbps)", sourceLocation: sourceLocation)
        #expect(throttled.count == throttledSeconds.count && throttledMean <= throttleKbps,
                "\(what): seconds \(throttledSeconds) not under the \(throttleKbps) kbps throttle: \(kbps)",
                sourceLocation: sourceLocation)
        let comparison = "\(what): the last \(freedSeconds) s after the throttle (\(freedMean) kbps) against "
            + "seconds \(throttledSeconds) under it (\(throttledMean) kbps): \(kbps)"
        #expect(freed.count == freedSeconds && freed.max() ?? 0 > throttleKbps, "\(comparison)",
                sourceLocation: sourceLocation)
        #expect(freedMean >= throttledMean + stepKbps, "\(comparison)", sourceLocation: sourceLocation)
    }
}
