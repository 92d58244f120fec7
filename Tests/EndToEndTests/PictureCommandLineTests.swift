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

        @Test(.timeLimit(.minutes(10)))
        func aWatermarkOptionThatIsWrongSaysWhatToType() throws {
            let result = try ProcessRunner.run(livepush, ["push", "rtmp://127.0.0.1:1/live/key", "--watermark", "logo.png@0.5"])
            #expect(result.exitCode == 2, "\(result)")
            #expect(result.standardError.contains("--watermark") && result.standardError.contains("FILE@X,Y,W[,OPACITY]"),
                    "\(result.standardError)")
        }
    }
}
