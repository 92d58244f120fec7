import Foundation
import Glibc
import Testing
import TestSupport

extension SharedScreen {
    /// Idle connections cannot end a broadcast (issue 30, attack 4): `livepush screen` with a
    /// dashboard, under a 1,024 descriptor limit (prlimit, soft and hard) and a CPU hog of the
    /// test's own, while Tests/Fixtures/idle_connections.py holds 1,100 idle connections to the
    /// dashboard (reopening those the server closes): the push goes on at its frame rate, a killed
    /// helper is restarted, a destination added meanwhile connects, and the pusher's threads and
    /// descriptors stay bounded.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct DashboardLimitsTests {
        let livepush = BuiltProducts.path("livepush")

        private func helperPid(of command: RunningCommand) -> Int32? {
            command.childProcessIdentifiers.first { pid in
                ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").contains("livepush-capture")
            }
        }

        /// Threads and open descriptors of `pid`, from /proc.
        private func resources(_ pid: Int32) -> (threads: Int, descriptors: Int) {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let threads = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
                .flatMap { Int($0.split(separator: "\t").last ?? "") } ?? -1
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count ?? -1
            return (threads, descriptors)
        }

        @Test func theDescriptorLimitIsRaisedToTheHardLimitAtStart() throws {
            let run = try ProcessRunner.start("prlimit", ["--nofile=256:4096", livepush, "push", "rtmp://127.0.0.1:9/live/k",
                                                          "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                                                          "--no-mic", "--quiet", "--duration", "3"])
            let pid = run.processIdentifier
            var limits = ""
            #expect(waitUntil(timeoutSeconds: 10) {
                limits = (try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)) ?? ""
                let commandLine = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
                return commandLine.contains("push") && limits.contains("Max open files            4096                 4096")
            }, "\(limits)")
            _ = run.finish()
        }

        @Test(.timeLimit(.minutes(10)))
        func theBroadcastKeepsItsPushItsHelperAndItsFrameRateThrough1100IdleConnections() throws {
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "square", "1e2a3a", "ffcc00", "120", "8"])
            defer {
                painter.closeInput()
                _ = painter.finish()
            }
            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            let key = UniqueName.make("flood"), second = UniqueName.make("flood2")
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "screen", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--fps", "30", "--no-mic", "--quiet",
                "--dashboard", "0",
            ], launcher: ["prlimit", "--nofile=1024:1024"])
            #expect(broadcast.command.waitForError("screen capture started", timeoutSeconds: 30),
                    "\(broadcast.command.errorSoFar)")
            #expect(try broadcast.waitUntilPublishing())
            let pid = broadcast.command.processIdentifier
            let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
            #expect(limits.contains("Max open files            1024                 1024"), "\(limits)")
            let line = try #require(broadcast.command.errorSoFar.split(separator: "\n")
                .first { $0.contains("dashboard: http") })
            let url = String(line.split(separator: " ").last ?? "")
            let port = try #require(url.split(separator: ":").last?.split(separator: "/").first.flatMap { Int($0) }, "\(url)")
            let token = String(url.split(separator: "=").last ?? "")
            let before = resources(pid)

            let flood = try ProcessRunner.start("python3", [Repository.path("Tests/Fixtures/idle_connections.py"),
                                                            "127.0.0.1", String(port), "1100"], interactive: true)
            defer {
                flood.closeInput()
                if flood.isRunning { kill(flood.processIdentifier, SIGKILL) }
                _ = flood.finish()
            }
            let connected = try #require(flood.waitForLine(startingWith: "connected", timeoutSeconds: 60),
                                         "\(flood.errorSoFar)")
            #expect(connected == "connected 1100", "\(connected)")
            // Long enough for a server without limits to have taken every connection.
            Thread.sleep(forTimeInterval: 3)
            let during = resources(pid)
            print("dashboard flood: threads \(before.threads) -> \(during.threads), descriptors \(before.descriptors) -> "
                + "\(during.descriptors) under 1100 idle connections")
            #expect(during.threads < before.threads + 80, "threads \(before.threads) -> \(during.threads)")
            #expect(during.descriptors < before.descriptors + 80, "descriptors \(before.descriptors) -> \(during.descriptors)")

            // The helper, killed, comes back (new socket, new ring); a new destination connects.
            let helper = try #require(helperPid(of: broadcast.command), "\(broadcast.command.errorSoFar)")
            kill(helper, SIGKILL)
            #expect(broadcast.command.waitForError("screen capture started", count: 2, timeoutSeconds: 30),
                    "\(broadcast.command.errorSoFar)")
            let added = try broadcast.ctl(["add", try TestEnvironment.recordURL(key: second)])
            #expect(added.answer?["ok"] as? Bool == true, "\(added.result)")
            #expect(try broadcast.waitUntilPublishing(destinations: 2, timeoutSeconds: 30), "\(broadcast.command.errorSoFar)")
            let file = try TestEnvironment.recordedFile(key: key).path
            let floodStartMs = ((try? FLVTagReader.lastVideoMs(file)) ?? nil) ?? 0
            Thread.sleep(forTimeInterval: 8)
            #expect(broadcast.command.isRunning, "\(broadcast.command.errorSoFar)")
            let after = resources(pid)
            #expect(after.threads < before.threads + 80 && after.descriptors < before.descriptors + 80, "\(before) -> \(after)")

            // The flood over, the dashboard answers again.
            flood.closeInput()
            _ = flood.finish()
            #expect(try waitUntil(timeoutSeconds: 30, intervalSeconds: 0.5) {
                let answer = try ProcessRunner.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                                                            "X-LivePush-Token: \(token)", "http://127.0.0.1:\(port)/api/status"])
                return answer.standardOutput == "200"
            }, "the dashboard did not come back after the flood")

            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            #expect(!result.standardError.contains("Too many open files"), "\(result)")
            let pictures = try ReceivedPictures.decode(try TestEnvironment.closedRecording(key: key))
            let gaps = zip(pictures.timesMs, pictures.timesMs.dropFirst()).map { $1 - $0 }
            let spanMs = (pictures.timesMs.last ?? 0) - (pictures.timesMs.first ?? 0)
            print("dashboard flood: \(pictures.count) pictures over \(spanMs) ms at the receiver, largest gap "
                + "\(gaps.max() ?? -1) ms (flood from \(floodStartMs) ms)")
            #expect(try #require(gaps.max()) <= 1000, "largest gap between pictures \(gaps.max() ?? -1) ms")
            #expect(Double(pictures.count) >= Double(spanMs) / 1000 * 30 * 0.9,
                    "\(pictures.count) pictures in \(spanMs) ms: the frame rate fell")
            let secondPictures = try ReceivedPictures.decode(try TestEnvironment.closedRecording(key: second))
            #expect(secondPictures.count >= 60, "the destination added during the flood got \(secondPictures.count) pictures")
        }
    }
}
