import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// The PipeWire daemon restarted mid-push (issue 17): the microphone comes back by itself,
    /// with warning 1302 then 1303, and its tone is at nginx again. The daemon is a private
    /// one (`tools/testenv start DIR --no-x11 --no-nginx`, stopped and started again at the same
    /// path), so the shared test daemon's other users are not disturbed.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the whole test environment (make test)"),
           .timeLimit(.minutes(3)))
    struct PipeWireRestartTests {
        @Test func theMicComesBackAfterThePipeWireDaemonRestarts() throws {
            let directory = "/tmp/lpr-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let testenv = Repository.path("tools/testenv")
            func startDaemon() throws {
                let started = try ProcessRunner.run(testenv, ["start", directory, "--no-x11", "--no-nginx"], timeoutSeconds: 60)
                try #require(started.exitCode == 0, "a private PipeWire did not start: \(started)")
            }
            func stopDaemon() throws {
                let stopped = try ProcessRunner.run(testenv, ["stop", directory, "--clean"], timeoutSeconds: 60)
                #expect(stopped.exitCode == 0, "\(stopped)")
            }
            try startDaemon()
            defer { _ = try? ProcessRunner.run(testenv, ["stop", directory, "--clean"], timeoutSeconds: 60) }
            let key = UniqueName.make("pwrestart")
            let livepush = try ProcessRunner.start(BuiltProducts.path("livepush"), [
                "screen", "--display", try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240",
                "--duration", "14", "--quiet", "--mic", "livepush-test-mic", try TestEnvironment.recordURL(key: key),
            ], environment: ["PIPEWIRE_REMOTE": directory + "/run/pipewire-0"])
            #expect(livepush.waitForError("screen capture started", timeoutSeconds: 15), "\(livepush.errorSoFar)")
            try stopDaemon()
            #expect(livepush.waitForError("went away", timeoutSeconds: 10), "\(livepush.errorSoFar)")
            try startDaemon()
            #expect(livepush.waitForError("is back", timeoutSeconds: 15), "\(livepush.errorSoFar)")
            let result = livepush.finish()
            #expect(result.exitCode == 0, "\(result)")
            let stderr = result.standardError
            let lost = try #require(stderr.range(of: "the microphone 'livepush-test-mic' went away"), "\(stderr)")
            let back = try #require(stderr.range(of: "the microphone 'livepush-test-mic' is back"), "\(stderr)")
            #expect(lost.upperBound <= back.lowerBound, "\(stderr)")
            // The last 3 s of what nginx received: the tone again.
            let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 13)
            #expect(received.count >= 48000 * 12, "\(received.count) samples reached nginx")
            let tail = Array(received.suffix(48000 * 3).prefix(48000 * 2))
            #expect(abs(AudioAnalysis.dominantFrequencyHz(tail, sampleRateHz: 48000) - 1000) < 2)
            #expect(AudioAnalysis.toneLevelDbfs(tail, frequencyHz: 1000, sampleRateHz: 48000) > -30)
        }
    }
}
