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
           .timeLimit(.minutes(10)))
    struct PipeWireRestartTests {
        /// A private PipeWire (with WirePlumber and the virtual mic) that can be stopped and
        /// started again at the same socket path.
        final class PrivateDaemon {
            let directory = "/tmp/lpr-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let testenv = Repository.path("tools/testenv")
            var socket: String { directory + "/run/pipewire-0" }

            func start() throws {
                let started = try ProcessRunner.run(testenv, ["start", directory, "--no-x11", "--no-nginx"], timeoutSeconds: 60)
                try #require(started.exitCode == 0, "a private PipeWire did not start: \(started)")
            }

            func stop() throws {
                let stopped = try ProcessRunner.run(testenv, ["stop", directory, "--clean"], timeoutSeconds: 60)
                #expect(stopped.exitCode == 0, "\(stopped)")
            }

            deinit { _ = try? ProcessRunner.run(testenv, ["stop", directory, "--clean"], timeoutSeconds: 60) }
        }

        @Test func theMicComesBackAfterThePipeWireDaemonRestarts() throws {
            let daemon = PrivateDaemon()
            try daemon.start()
            let directory = daemon.directory
            func stopDaemon() throws { try daemon.stop() }
            func startDaemon() throws { try daemon.start() }
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
    
        /// `livepush screen --source pipewire --target NAME`: when the daemon restarts, the helper
        /// loses its stream, exits, and is restarted by the supervisor once the producer's node
        /// is back; the recording goes on and ends with the new producer's picture.
        @Test func aPipeWireScreenHelperIsRestartedWhenTheDaemonRestarts() throws {
            let daemon = PrivateDaemon()
            try daemon.start()
            let name = UniqueName.make("lp-restart-video")
            var source = try PipeWireVideoSource(name: name, ["--size", "320x240", "--color", "00ff00", "--fps", "30"],
                                                 daemonSocket: daemon.socket)
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("pwr")).path + ".mkv"
            defer { try? FileManager.default.removeItem(atPath: path) }
            let livepush = try ProcessRunner.start(BuiltProducts.path("livepush"), [
                "screen", path, "--source", "pipewire", "--target", name, "--no-mic", "--no-cursor",
                "--resolution", "320x240", "--fps", "30", "--duration", "14", "--quiet",
            ], environment: ["PIPEWIRE_REMOTE": daemon.socket])
            #expect(livepush.waitForError("screen capture started", timeoutSeconds: 15), "\(livepush.errorSoFar)")
            try daemon.stop()
            source.stop()  // its daemon is gone; a new producer comes with the new daemon
            try daemon.start()
            source = try PipeWireVideoSource(name: name, ["--size", "320x240", "--color", "0000ff", "--fps", "30"],
                                             daemonSocket: daemon.socket)
            defer { source.stop() }
            #expect(livepush.waitForError("screen capture started", count: 2, timeoutSeconds: 20), "\(livepush.errorSoFar)")
            let result = livepush.finish()
            #expect(result.exitCode == 0, "\(result)")
            let stream = try MediaProbe.videoStream(path)
            let frames = Int(stream["nb_read_frames"] ?? "") ?? 0
            #expect(frames > 300, "\(frames) frames in 14 s")
            let rgb = try MediaProbe.decodedRGB(path, frame: max(0, frames - 10))
            let offset = (120 * 320 + 160) * 3
            let pixel = rgb.count >= offset + 3 ? rgb[offset..<offset + 3].map(Int.init) : []
            #expect(pixel.count == 3 && pixel[0] < 40 && pixel[1] < 40 && pixel[2] > 200,
                    "the last picture is the new producer's blue: \(pixel)")
        }
}
}
