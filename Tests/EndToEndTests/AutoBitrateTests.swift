import Foundation
import Testing
import TestSupport

/// Auto bitrate as a user meets it: `livepush screen --bitrate 4500` on a loopback nginx with
/// nothing in the way must climb from the table's initial bitrate to the target within the ramp
/// time docs/guide.md gives, measured in the stream nginx recorded.
@Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct AutoBitrateTests {
    let livepush = BuiltProducts.path("livepush")

    @Test(.timeLimit(.minutes(10)))
    func onAGoodNetworkTheBitrateClimbsFromTheInitialOneToTheTarget() throws {
        let key = UniqueName.make("ramp")
        // 1080p resolution-first: initial 1800 kbps; up a tenth of the target (450) every 3 s:
        // six steps, at the target about 18 s in.
        let result = try ProcessRunner.run(livepush, [
            "screen", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
            "--bitrate", "4500", "--no-mic", "--duration", "26", "--quiet",
        ], timeoutSeconds: 60)
        #expect(result.exitCode == 0, "\(result)")
        let kbps = try MediaProbe.videoKbpsPerSecond(try TestEnvironment.closedRecording(key: key))
        #expect(kbps.count >= 24, "nginx recorded \(kbps.count) s: \(kbps)")
        let start = kbps.dropFirst().prefix(2)
        let end = kbps.dropFirst(20).prefix(4)
        let startKbps = start.reduce(0, +) / max(1, start.count)
        let endKbps = end.reduce(0, +) / max(1, end.count)
        #expect((1500...2100).contains(startKbps), "seconds 1-2 at \(startKbps) kbps, not about 1800: \(kbps)")
        #expect((4000...5000).contains(endKbps), "seconds 20-23 at \(endKbps) kbps, not about 4500: \(kbps)")
    }
}
