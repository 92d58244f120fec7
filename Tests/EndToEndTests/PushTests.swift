import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush push` to the real nginx-rtmp of the test environment; what nginx recorded is read
    /// back with ffprobe, and the stream key appears in no output.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                                 "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct PushTests {
        let livepush = BuiltProducts.path("livepush")

        @Test func screenPushedToNginxIsRecordedThereAndTheKeyIsNeverPrinted() throws {
            let key = UniqueName.make("pushkey")
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+400+100", "solid", "00ff00"])
            defer { painter.closeInput(); _ = painter.finish() }
            let result = try ProcessRunner.run(livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "400,100,320,240", "--resolution", "320x240", "--duration", "3",
            ], timeoutSeconds: 30)
            #expect(result.exitCode == 0, "\(result)")
            #expect(!result.standardOutput.contains(key) && !result.standardError.contains(key))
            // The status line's clock runs while pushing, and the end line says for how long and how much.
            #expect(result.standardError.contains("pushing 00:00:02."), "\(result.standardError)")
            let end = try #require(result.standardOutput.split(separator: "\n").first { $0.hasPrefix("Pushed ") },
                                   "\(result.standardOutput)")
            let seconds = Double(end.dropFirst("Pushed 00:00:".count).prefix(4)) ?? 0
            #expect((2.0...3.5).contains(seconds), "pushed for \(seconds) s of about 3: \(end)")
            #expect(end.hasSuffix("of 320x240 at 30 fps to rtmp://127.0.0.1:\(try TestEnvironment.value("LIVEPUSH_TEST_RTMP_PORT", of: .rtmp))/record/****"), "\(end)")
            #expect(end.contains(" kB) of ") || end.contains(" MB) of "), "\(end)")
            let stream = try MediaProbe.videoStream(try TestEnvironment.closedRecording(key: key))
            #expect(stream["codec_name"] == "h264" && stream["width"] == "320" && stream["height"] == "240")
            let frames = Int(stream["nb_read_frames"] ?? "") ?? 0
            #expect((70...95).contains(frames), "nginx recorded \(frames) frames of about 90")
        }

        @Test func twoDestinationsShareOneEncodeAndBothRecordTheStream() throws {
            let keys = [UniqueName.make("first"), UniqueName.make("second")]
            let result = try ProcessRunner.run(livepush, [
                "push", try TestEnvironment.recordURL(key: keys[0]), try TestEnvironment.recordURL(key: keys[1]),
                "--display", try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240",
                "--duration", "3", "--quiet",
            ], timeoutSeconds: 30)
            #expect(result.exitCode == 0, "\(result)")
            #expect(result.standardOutput.components(separatedBy: " fps to rtmp://").count == 3, "\(result.standardOutput)")
            for key in keys {
                let stream = try MediaProbe.videoStream(try TestEnvironment.closedRecording(key: key))
                let frames = Int(stream["nb_read_frames"] ?? "") ?? 0
                #expect(stream["codec_name"] == "h264" && (70...95).contains(frames), "\(key): \(stream)")
            }
        }

        @Test func unreachableServerIsRetriedThenGivenUpWithoutTheKey() throws {
            let result = try ProcessRunner.run(livepush, [
                "push", "rtmp://127.0.0.1:9/live/hidden", "--display", try TestEnvironment.display(),
                "--retry-count", "1", "--retry-interval", "1000", "--quiet",
            ], timeoutSeconds: 30)
            #expect(result.exitCode == 1)
            #expect(result.standardError.contains("connection refused"))
            #expect(result.standardError.contains("reconnecting to rtmp://127.0.0.1:9/live/**** in "), "\(result.standardError)")
            #expect(result.standardError.contains(" ms (attempt 1 of 1)"), "\(result.standardError)")
            #expect(!result.standardError.contains("hidden") && !result.standardOutput.contains("hidden"))
        }

        /// A user name and password before the host are refused and never echoed, in any scheme.
        @Test(arguments: ["rtmp://viewer:PASSWORD@127.0.0.1:9/live/hidden", "rtmps://PASSWORD@127.0.0.1:9/live/hidden",
                          "srt://viewer:PASSWORD@127.0.0.1:9?streamid=hidden&passphrase=hiddenhidden"])
        func credentialsBeforeTheHostAreRefusedWithoutBeingEchoed(url: String) throws {
            let result = try ProcessRunner.run(livepush, ["push", url, "--display", try TestEnvironment.display(), "--quiet"],
                                               timeoutSeconds: 30)
            #expect(result.exitCode == 2, "refused before the start (issue 35): \(result)")
            #expect(result.standardError.contains("a user name or password before the host"), "\(result)")
            for secret in ["PASSWORD", "viewer", "hidden"] {
                #expect(!result.standardError.contains(secret) && !result.standardOutput.contains(secret),
                        "'\(secret)' was printed: \(result)")
            }
        }

        @Test func urlThatIsNotRTMPSaysHowToWriteOne() throws {
            let result = try ProcessRunner.run(livepush, ["push", "http://127.0.0.1/live/key",
                                                          "--display", try TestEnvironment.display(), "--quiet"])
            #expect(result.exitCode == 2, "refused before the start (issue 35): \(result)")
            #expect(result.standardError.contains("'http://' is a web address, not a push URL"), "\(result)")
            #expect(result.standardError.contains("use rtmp://host[:port]/app/key, rtmps://host[:port]/app/key or "
                + "srt://host:port?streamid=..."), "\(result)")
        }
    }
}
