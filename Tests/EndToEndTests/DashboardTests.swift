import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// The live dashboard opened in headless Chromium (Debian's chromium, driven over the DevTools
    /// protocol by Tests/Fixtures/browser_check.py) during a real push to the test nginx-rtmp.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"), .timeLimit(.minutes(10)))
    struct DashboardTests {
        let livepush = BuiltProducts.path("livepush")

        @Test(.timeLimit(.minutes(10)))
        func chartsGrowThePictureMovesThePauseButtonPausesTheStreamAndAWrongTokenIsRefused() throws {
            let key = UniqueName.make("dashkey")
            let red = try ReceivedStream.redPicture()
            // A square crossing the captured region (7 px a frame: its position repeats only every 320 frames).
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "square", "203040", "ffcc00", "60", "7"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--pause-image", red,
                "--mic", try TestEnvironment.microphone(), "--quiet", "--dashboard", "0", "--duration", "90",
            ])
            #expect(try broadcast.waitUntilPublishing())
            #expect(broadcast.command.waitForError("dashboard: http://127.0.0.1:"), "\(broadcast.command.errorSoFar)")
            let line = try #require(broadcast.command.errorSoFar.split(separator: "\n").first { $0.contains("dashboard: http") })
            let url = String(try #require(line.split(separator: " ").last))
            #expect(url.contains("?token=") && url.split(separator: "=").last?.count == 32, "a 128-bit token: \(url)")
            let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("dash") + ".png").path
            let check = try ProcessRunner.run("python3", [Repository.path("Tests/Fixtures/browser_check.py"), "dashboard",
                                                          url, screenshot], timeoutSeconds: 90)
            #expect(check.exitCode == 0, "\(check)")
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(check.standardOutput.utf8)) as? [String: Any],
                                    "\(check)")
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            #expect(!result.standardError.contains(key) && !result.standardOutput.contains(key))

            #expect(seen["wrongTokenStatus"] as? Int == 403, "\(seen)")
            #expect((seen["wrongTokenText"] as? String)?.contains("403 Forbidden") == true, "\(seen)")
            #expect(seen["loaded"] as? Bool == true, "\(seen)")
            let points1 = seen["datasetPoints1"] as? Int ?? 0, points2 = seen["datasetPoints2"] as? Int ?? 0
            #expect(points2 >= points1 + 2, "the charts grew from \(points1) to \(points2) points in 3 s")
            #expect(seen["previewSeen"] as? Bool == true)
            #expect(seen["previewDifference"] as? Int ?? 0 > 100, "the picture changed: \(seen["previewDifference"] ?? 0)")
            let canvases = seen["canvases"] as? [[String: Any]] ?? []
            #expect(canvases.count == 6 && canvases.allSatisfy { $0["drawn"] as? Int ?? 0 > 2000 }, "\(canvases)")
            #expect(seen["pausedInStatus"] as? Bool == true, "\(seen)")
            #expect((seen["stateText"] as? String)?.contains("paused") == true, "\(seen)")

            // The button paused the stream nginx received: it ends on the pause picture.
            let frames = try ReceivedStream.tinyFrames(try TestEnvironment.closedRecording(key: key))
            let isRed = frames.map { Int($0[15]) > 180 && Int($0[16]) < 80 && Int($0[17]) < 80 }
            let trailingRed = isRed.reversed().prefix { $0 }.count
            #expect(trailingRed >= 60, "the last \(trailingRed) frames show the pause picture (~3 s expected)")
            // At least 2 s of the screen (its length depends on how fast the browser check ran).
            #expect(isRed.filter { !$0 }.count > 60, "the screen before the pause: \(isRed.filter { !$0 }.count) frames")

            // The screenshot is a page, not a blank: many colours.
            let colours = try distinctColours(screenshot)
            #expect(colours >= 40, "\(colours) colours in the 32x32 screenshot")
        }

        /// Issue 35 item 8: on a 1366 px wide screen (a common laptop) the dashboard fits across: no
        /// horizontal scrolling, every cell of the destinations table (two destinations) in view. The
        /// screenshot is kept as /tmp/livepush-dashboard-1366.png to look at.
        @Test(.timeLimit(.minutes(10)))
        func theDashboardFitsA1366PixelWideWindow() throws {
            let first = UniqueName.make("fit1"), second = UniqueName.make("fit2")
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: first), try TestEnvironment.recordURL(key: second),
                "--display", try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240",
                "--no-mic", "--quiet", "--dashboard", "0", "--duration", "60",
            ])
            #expect(try broadcast.waitUntilPublishing(destinations: 2), "\(broadcast.command.errorSoFar)")
            #expect(broadcast.command.waitForError("dashboard: http://127.0.0.1:"), "\(broadcast.command.errorSoFar)")
            let line = try #require(broadcast.command.errorSoFar.split(separator: "\n").first { $0.contains("dashboard: http") })
            let url = String(try #require(line.split(separator: " ").last))
            let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent("livepush-dashboard-1366.png").path
            let check = try ProcessRunner.run("python3", [Repository.path("Tests/Fixtures/browser_check.py"), "fit", url,
                                                          "1366", "768", screenshot], timeoutSeconds: 90)
            _ = broadcast.stop()
            #expect(check.exitCode == 0, "\(check)")
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(check.standardOutput.utf8)) as? [String: Any],
                                    "\(check)")
            #expect(seen["loaded"] as? Bool == true && seen["rows"] as? Int == 2, "\(seen)")
            let viewport = try #require(seen["viewportWidth"] as? Int, "\(seen)")
            #expect(viewport <= 1366 && viewport > 1300, "\(seen)")
            #expect(seen["pageScrollWidth"] as? Int ?? .max <= viewport, "no horizontal scrolling: \(seen)")
            #expect(seen["sectionScrollWidth"] as? Int ?? .max <= seen["sectionClientWidth"] as? Int ?? 0,
                    "the destinations fit their section: \(seen)")
            #expect(seen["cells"] as? Int == 18 && seen["cutCells"] as? Int == 0, "no cell cut off: \(seen)")
            #expect(seen["chartsRight"] as? Int ?? .max <= viewport, "\(seen)")
            #expect(try distinctColours(screenshot) >= 40, "a page, not a blank")
        }

        @Test func aBadDashboardAddressIsAUsageErrorNamingTheOption() throws {
            let result = try ProcessRunner.run(livepush, ["push", "rtmp://127.0.0.1/live/k", "--dashboard", "localhost:x"])
            #expect(result.exitCode == 2)
            #expect(result.standardError.contains("invalid value 'localhost:x' for '--dashboard': use PORT or IPV4ADDRESS:PORT"),
                    "\(result)")
        }

        private func distinctColours(_ png: String) throws -> Int {
            let raw = png + ".rgb"
            defer { try? FileManager.default.removeItem(atPath: raw) }
            let result = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", png, "-vf", "scale=32:32",
                                                          "-f", "rawvideo", "-pix_fmt", "rgb24", raw])
            #expect(result.exitCode == 0, "\(result)")
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
            var colours = Set<Int>()
            for index in stride(from: 0, to: bytes.count - 2, by: 3) {
                let red = Int(bytes[index]), green = Int(bytes[index + 1]), blue = Int(bytes[index + 2])
                colours.insert(red << 16 | green << 8 | blue)
            }
            return colours.count
        }
    }
}
