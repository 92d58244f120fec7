import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// The picture from the command line (issue 16): `--watermark`, `livepush ctl watermark
    /// add|remove` and `livepush ctl snapshot`, on a real X11 capture pushed to nginx, measured in
    /// the snapshot PNG and in what nginx recorded.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct PictureCommandLineTests {
        let livepush = BuiltProducts.path("livepush")

        private func temporary(_ name: String, _ ext: String) -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(name)).path + "." + ext
        }

        private func picture(_ colour: String) throws -> String {
            let path = temporary(colour, "png")
            let result = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                                                          "color=c=\(colour):s=64x32", "-frames:v", "1", path])
            #expect(result.exitCode == 0, "\(result)")
            return path
        }

        /// The RGB at (x, y) of a 320x240 RGB24 picture.
        private func pixel(_ rgb: [UInt8], _ x: Int, _ y: Int) -> (r: Int, g: Int, b: Int) {
            let index = (y * 320 + x) * 3
            guard index + 2 < rgb.count else { return (-1, -1, -1) }
            return (Int(rgb[index]), Int(rgb[index + 1]), Int(rgb[index + 2]))
        }

        private func near(_ value: (r: Int, g: Int, b: Int), _ expected: (Int, Int, Int)) -> Bool {
            abs(value.r - expected.0) <= 16 && abs(value.g - expected.1) <= 16 && abs(value.b - expected.2) <= 16
        }

        static let red = (255, 0, 0), blue = (0, 0, 255), green = (0, 255, 0)

        @Test(.timeLimit(.minutes(10)))
        func watermarksFromTheCommandLineAndCtlAndACtlSnapshotShowWhatNginxReceives() throws {
            let key = UniqueName.make("ctlpicture")
            let red = try picture("red"), blue = try picture("blue")
            let snapshot = temporary("snapshot", "png")
            defer { [red, blue, snapshot].forEach { try? FileManager.default.removeItem(atPath: $0) } }
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "solid", "00ff00"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic", "--quiet", "--duration", "60",
                "--watermark", red + "@0.5,0.25,0.25",
            ])
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            // The snapshot, as observable state: poll it until it shows what the command changed.
            func snapshotRGB() throws -> [UInt8]? {
                let reply = try broadcast.ctl(["snapshot", snapshot])
                guard reply.result.exitCode == 0, reply.answer?["ok"] as? Bool == true else { return nil }
                return try MediaProbe.decodedRGB(snapshot, frame: 0)
            }
            func waitForSnapshot(_ what: String, _ condition: ([UInt8]) -> Bool) throws {
                let deadline = Date().addingTimeInterval(15)
                var last: [UInt8] = []
                while Date() < deadline {
                    if let rgb = try snapshotRGB() {
                        last = rgb
                        if condition(rgb) { return }
                    }
                    Thread.sleep(forTimeInterval: 0.2)
                }
                let seen = "at (200, 80) \(pixel(last, 200, 80)), at (40, 200) \(pixel(last, 40, 200)), "
                    + "the screen at (100, 200) \(pixel(last, 100, 200))"
                Issue.record(Comment(rawValue: "the snapshot never showed \(what): \(seen)"))
            }
            try waitForSnapshot("the red --watermark on the green screen") {
                near(pixel($0, 200, 80), Self.red) && near(pixel($0, 100, 200), Self.green)
            }
            let added = try broadcast.ctl(["watermark", "add", blue + "@0.05,0.75,0.2,1"])
            #expect(added.result.exitCode == 0, "\(added.result)")
            let result = try #require(added.answer?["result"] as? [String: Any])
            #expect(result["watermarkId"] as? Int == 2, "the --watermark is 1, this one 2: \(result["watermarkId"] ?? "none")")
            try waitForSnapshot("the blue watermark") { near(pixel($0, 40, 200), Self.blue) }
            #expect(try broadcast.ctl(["watermark", "remove", "1"]).result.exitCode == 0)
            let again = try broadcast.ctl(["watermark", "remove", "1"])
            #expect(again.result.exitCode == 1 && again.result.standardError.contains("the watermarks' ids are 2"),
                    "\(again.result)")
            try waitForSnapshot("the red watermark gone") { near(pixel($0, 200, 80), Self.green) }
            let received = try broadcast.ctl(["snapshot", snapshot]).answer?["result"] as? [String: Any]
            #expect(received?["snapshot"] as? String == snapshot)
            let stopped = broadcast.stop()
            #expect(stopped.exitCode == 0, "\(stopped)")

            let path = try TestEnvironment.recordedFile(key: key).path
            let deadline = Date().addingTimeInterval(10)
            while ((try? MediaProbe.packetCount(path)) ?? 0) < 20 && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            let count = try MediaProbe.decodedFrameCount(path)
            let first = try MediaProbe.decodedRGB(path, frame: 5), last = try MediaProbe.decodedRGB(path, frame: count - 2)
            #expect(near(pixel(first, 200, 80), Self.red), "red at the start: \(pixel(first, 200, 80))")
            #expect(near(pixel(last, 200, 80), Self.green), "red removed at the end: \(pixel(last, 200, 80))")
            #expect(near(pixel(last, 40, 200), Self.blue), "blue at the end: \(pixel(last, 40, 200))")
            let still = try MediaProbe.decodedRGB(snapshot, frame: 0)
            let difference = zip(still, last).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) } / max(1, still.count)
            #expect(still.count == last.count && difference <= 6, "the last snapshot and the stream differ by \(difference)")
        }


        /// Closed with the close button (WM_DELETE_WINDOW, what a window manager sends), or by xkill
        /// (the X server drops the preview's connection).
        @Test(.timeLimit(.minutes(10)), arguments: ["close-button", "xkill"])
        func thePreviewWindowShowsTheStreamMirroredAndClosingItLeavesTheBroadcastRunning(closedBy: String) throws {
            let key = UniqueName.make("preview")
            let red = try picture("red")
            let snapshot = temporary("previewshot", "png")
            defer { [red, snapshot].forEach { try? FileManager.default.removeItem(atPath: $0) } }
            // Eight vertical bars, white on the left to black on the right: left and right differ.
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "bars"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic", "--quiet", "--duration", "60",
                "--watermark", red + "@0,0,0.25", "--preview", "--preview-mirror", "--preview-geometry", "320x240+1560+800",
            ], environment: ["DISPLAY": try TestEnvironment.display()])
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            // The window, found by its title.
            var windowID: String?
            let deadline = Date().addingTimeInterval(10)
            while windowID == nil && Date() < deadline {
                let info = try ProcessRunner.run("xwininfo", ["-display", try TestEnvironment.display(),
                                                              "-name", "LivePush preview: \(broadcast.name)"])
                windowID = info.standardOutput.split(separator: "\n").first { $0.contains("Window id:") }
                    .flatMap { $0.split(separator: " ").first { $0.hasPrefix("0x") } }.map(String.init)
                if windowID == nil { Thread.sleep(forTimeInterval: 0.1) }
            }
            let window = try #require(windowID, "no preview window titled 'LivePush preview: \(broadcast.name)'")
            // The preview shows the stream mirrored: the watermark (top left in the stream) top right.
            var preview: [UInt8] = []
            let shown = Date().addingTimeInterval(10)
            while Date() < shown {
                if let pixels = try X11Painter.windowPixels(window), pixels.count == 320 * 240 * 3 {
                    preview = pixels
                    if near(pixel(pixels, 300, 10), Self.red) { break }
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(near(pixel(preview, 300, 10), Self.red), "the mirrored watermark: \(pixel(preview, 300, 10))")
            let shot = try broadcast.ctl(["snapshot", snapshot])
            #expect(shot.result.exitCode == 0, "\(shot.result)")
            let stream = try MediaProbe.decodedRGB(snapshot, frame: 0)
            var difference = 0, compared = 0
            for y in stride(from: 4, to: 240, by: 8) {
                for x in stride(from: 4, to: 320, by: 8) {
                    let shown = pixel(preview, x, y), sent = pixel(stream, 319 - x, y)
                    difference += abs(shown.r - sent.r) + abs(shown.g - sent.g) + abs(shown.b - sent.b)
                    compared += 3
                }
            }
            #expect(difference / max(1, compared) <= 8, "the preview differs from the mirrored stream by \(difference / max(1, compared))")
            #expect(near(pixel(stream, 20, 120), (255, 255, 255)) && near(pixel(preview, 20, 120), (0, 0, 0)),
                    "stream left \(pixel(stream, 20, 120)) (white bar), preview left \(pixel(preview, 20, 120)) (black bar)")
            // Closing it; the broadcast goes on.
            func close() throws {
                let close = closedBy == "xkill"
                    ? try ProcessRunner.run("xkill", ["-display", try TestEnvironment.display(), "-id", window])
                    : try ProcessRunner.run(try Repository.windowCloser(), [try TestEnvironment.display(), window])
                #expect(close.exitCode == 0, "\(close)")
            }
            func warned() -> Bool {
                broadcast.events.contains { $0["type"] as? String == "warning" && $0["code"] as? Int == 1531 }
            }
            try close()
            let closeDeadline = Date().addingTimeInterval(10)
            while !warned() && Date() < closeDeadline { Thread.sleep(forTimeInterval: 0.1) }
            #expect(warned(), "no previewClosed warning (1531) in the events")
            let gone = try ProcessRunner.run("xwininfo", ["-display", try TestEnvironment.display(), "-id", window])
            #expect(gone.exitCode != 0, "the window is still there: \(gone.standardOutput)")
            #expect(broadcast.command.isRunning)
            #expect(try broadcast.waitUntilPublishing(), "still publishing after the preview closed")
            let after = try broadcast.ctl(["snapshot", snapshot])
            #expect(after.result.exitCode == 0, "pictures still go out: \(after.result)")
            let stopped = broadcast.stop()
            #expect(stopped.exitCode == 0, "\(stopped)")
        }

        @Test(.timeLimit(.minutes(10)))
        func theWatermarkAndMirrorOptionsAreInTheConfiguration() throws {
            let result = try ProcessRunner.run(livepush, ["push", "rtmp://127.0.0.1:1/live/key", "--print-config",
                                                          "--watermark", "a.png@0.1,0.2,0.3", "--watermark", "b.jpg@0,0,1,0.5",
                                                          "--push-mirror"])
            #expect(result.exitCode == 0, "\(result)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
            let marks = try #require(object["watermarks"] as? [[String: Any]])
            #expect(marks.map { $0["path"] as? String } == ["a.png", "b.jpg"])
            #expect(marks.map { $0["opacity"] as? Double } == [1, 0.5])
            #expect(marks.first?["width"] as? Double == 0.3)
            #expect(object["pushMirror"] as? Bool == true)
        }

        @Test(.timeLimit(.minutes(10)))
        func aWatermarkOptionThatIsWrongSaysWhatToType() throws {
            let result = try ProcessRunner.run(livepush, ["push", "rtmp://127.0.0.1:1/live/key", "--watermark", "logo.png@0.5"])
            #expect(result.exitCode == 2, "\(result)")
            #expect(result.standardError.contains("--watermark") && result.standardError.contains("FILE@X,Y,W[,OPACITY]"),
                    "\(result.standardError)")
        }
    }
}
