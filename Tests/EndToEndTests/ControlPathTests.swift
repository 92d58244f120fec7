import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// A file named over `ctl` or the dashboard that is a FIFO or a device (issue 30, attack 7):
    /// the command gets an error naming what the file is, at once; the client never hangs and the
    /// broadcast goes on.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct ControlPathTests {
        let livepush = BuiltProducts.path("livepush")

        @Test(.timeLimit(.minutes(10)))
        func aFIFOOrADeviceNamedOverCtlOrTheDashboardGetsANamedErrorAtOnce() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("paths")).path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            for name in ["music.mp3", "mark.png", "shot.png"] { #expect(mkfifo(directory + "/" + name, 0o600) == 0) }
            #expect(symlink("/dev/zero", directory + "/zero.png") == 0)
            #expect(symlink("/dev/null", directory + "/null.png") == 0)
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: UniqueName.make("pathkey")), "--display",
                try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240",
                "--mic", try TestEnvironment.microphone(), "--quiet", "--dashboard", "0", "--dashboard-control", "all",
            ])
            #expect(try broadcast.waitUntilPublishing())
            let cases: [([String], String)] = [
                (["bgm", "start", directory + "/music.mp3"],
                 "'\(directory)/music.mp3' is a FIFO (named pipe), not a regular file"),
                (["watermark", "add", directory + "/mark.png@0.1,0.1,0.2"],
                 "'\(directory)/mark.png' is a FIFO (named pipe), not a regular file"),
                (["watermark", "add", directory + "/zero.png@0.1,0.1,0.2"],
                 "'\(directory)/zero.png' is a character device, not a regular file"),
                (["snapshot", directory + "/shot.png"], "'\(directory)/shot.png' is a FIFO (named pipe), not a regular file"),
                (["snapshot", directory + "/null.png"], "'\(directory)/null.png' is a character device, not a regular file"),
            ]
            for (words, message) in cases {
                let started = Date()
                let (result, answer) = try broadcast.ctl(words)
                let seconds = Date().timeIntervalSince(started)
                #expect(!result.timedOut, "'ctl \(words.joined(separator: " "))' hung")
                #expect(seconds < 5, "'ctl \(words.joined(separator: " "))' took \(seconds) s")
                #expect(answer?["ok"] as? Bool == false, "\(result)")
                #expect(result.standardError.contains(message), "\(result)")
            }
            // The same over the dashboard (with every command allowed).
            let line = try #require(broadcast.command.errorSoFar.split(separator: "\n")
                .first { $0.contains("dashboard: http") })
            let url = String(line.split(separator: " ").last ?? "")
            let base = String(url.split(separator: "?").first ?? "")
            let token = String(url.split(separator: "=").last ?? "")
            let curl = try ProcessRunner.run("curl", ["-s", "-m", "10", "-X", "POST", "-H", "X-LivePush-Token: \(token)",
                                                      base + "api/control?command=snapshot&args=\(directory)/shot.png"],
                                             timeoutSeconds: 20)
            #expect(curl.exitCode == 0 && curl.standardOutput.contains("is a FIFO (named pipe), not a regular file"), "\(curl)")
            let status = try broadcast.ctl(["status"])
            #expect(status.answer?["ok"] as? Bool == true, "the broadcast answers after all this: \(status.result)")
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
        }
    }
}
