import CaptureLink
import Foundation
import Synchronization
import Testing
import TestSupport

extension SharedScreen {
    /// Adaptive resolution with livepush-capture (LPC_CAP_SCALE, SPEC clarification 28): through
    /// the tests' throttling proxy in front of nginx the size steps down and back up, the helper is
    /// asked with CONFIG for each size and its frames follow (the pusher's `sourceWidth`), and what
    /// nginx recorded shows the whole region scaled, not its top-left corner cropped.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct HelperScalingTests {
        static let grey = (r: 0x40, g: 0x40, b: 0x40)
        static let green = (r: 0x00, g: 0xFF, b: 0x00)

        private func pixel(_ rgb: [UInt8], width: Int, _ x: Int, _ y: Int) -> (r: Int, g: Int, b: Int) {
            let offset = (y * width + x) * 3
            guard offset + 2 < rgb.count else { return (-1, -1, -1) }
            return (Int(rgb[offset]), Int(rgb[offset + 1]), Int(rgb[offset + 2]))
        }

        private func near(_ a: (r: Int, g: Int, b: Int), _ b: (r: Int, g: Int, b: Int)) -> Bool {
            abs(a.r - b.r) <= 40 && abs(a.g - b.g) <= 40 && abs(a.b - b.b) <= 40
        }

        /// The picture shown at `time` (seconds) at its own size, RGB24. (`MediaProbe.decodedRGB`'s
        /// frame number is counted anew by ffmpeg's filter graph at each size change.)
        private func decodedRGB(_ path: String, at time: String) throws -> [UInt8] {
            let raw = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("scaled")).path
            defer { try? FileManager.default.removeItem(atPath: raw) }
            let result = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-ss", time, "-i", path,
                                                          "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", raw])
            #expect(result.exitCode == 0, "\(result)")
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        }

        /// The statistics events' (encoded width, source width) pairs so far.
        private func widths(_ broadcast: LiveBroadcast) -> [(encoded: Int, source: Int)] {
            broadcast.events.filter { $0["type"] as? String == "statistics" }
                .map { ($0["width"] as? Int ?? 0, $0["sourceWidth"] as? Int ?? 0) }
        }

        @Test func theHelperIsAskedForTheSmallerSizeAndNginxGetsTheWholeRegionScaled() throws {
            // A grey 960x540 region with a green square in its bottom-right quarter: a crop to
            // 640x360 from the top-left corner would lose the square; scaling puts it at 2/3.
            let (background, _) = try X11Painter.start(["--geometry", "960x540+0+0", "solid", "404040"])
            defer { background.closeInput(); _ = background.finish() }
            let (square, _) = try X11Painter.start(["--geometry", "120x120+780+390", "solid", "00ff00"])
            defer { square.closeInput(); _ = square.finish() }
            let rtmpPort = try TestEnvironment.value("LIVEPUSH_TEST_RTMP_PORT", of: .rtmp)
            let proxy = try ThrottlingProxy(targetPort: try #require(UInt16(rtmpPort)), rateKbps: 150)
            defer { proxy.close() }
            let key = UniqueName.make("helperscale")
            let broadcast = try LiveBroadcast(livepush: try BuiltProducts.path("livepush"), [
                "push", "rtmp://127.0.0.1:\(proxy.port)/record/\(key)", "--display", try TestEnvironment.display(),
                "--region", "0,0,960,540", "--resolution", "960x540", "--fps", "15", "--quality", "custom",
                "--bitrate", "700", "--min-bitrate", "300", "--initial-bitrate", "700", "--auto-resolution",
                "--no-mic", "--no-cursor", "--duration", "120",
            ])
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            // Down: the encoder at 640x360 and the helper's frames too (it scaled, the pusher did not).
            let down = waitUntil(timeoutSeconds: 60, intervalSeconds: 0.2) {
                widths(broadcast).contains { $0 == (640, 640) }
            }
            #expect(down, "encoded and source widths: \(widths(broadcast))")
            // Some seconds at the small size, then the network recovers.
            let seen = widths(broadcast).count
            _ = waitUntil(timeoutSeconds: 10, intervalSeconds: 0.2) { widths(broadcast).count >= seen + 2 }
            proxy.rateKbps = 0
            let up = waitUntil(timeoutSeconds: 60, intervalSeconds: 0.2) {
                widths(broadcast).suffix(from: seen).contains { $0 == (960, 960) }
            }
            #expect(up, "encoded and source widths after the recovery: \(widths(broadcast))")
            let settled = widths(broadcast).count
            _ = waitUntil(timeoutSeconds: 10, intervalSeconds: 0.2) { widths(broadcast).count >= settled + 2 }
            let stopped = broadcast.stop()
            #expect(stopped.exitCode == 0, "\(stopped)")
            #expect(stopped.standardError.contains("frames are now 640x360 (scaled by render from 960x540"),
                    "the helper's note: \(stopped.standardError)")

            let path = try TestEnvironment.closedRecording(key: key)
            let frames = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                           "frame=width,best_effort_timestamp_time", "-of",
                                                           "compact=p=0", path], timeoutSeconds: 120)
            // One "key=value|key=value" line a frame.
            let rows = frames.standardOutput.split(separator: "\n").map { line in
                Dictionary(line.split(separator: "|").map { field in
                    let parts = field.split(separator: "=", maxSplits: 1).map(String.init)
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                }, uniquingKeysWith: { first, _ in first })
            }.filter { $0["width"] != nil }
            let frameWidths = rows.map { Int($0["width"] ?? "") ?? 0 }
            let frameTimes = rows.map { $0["best_effort_timestamp_time"] ?? "" }
            var runs: [Int] = []
            for width in frameWidths where runs.last != width { runs.append(width) }
            #expect(runs == [960, 640, 960], "widths decoded in order: \(runs)")
            let decode = try ProcessRunner.run(
                "ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:v:0"] + MediaProbe.nullOutput,
                timeoutSeconds: 120)
            #expect(decode.exitCode == 0 && decode.standardError.isEmpty, "ffmpeg decodes across the changes: \(decode)")
            // A picture from the middle of the small run: the square's centre (840, 450) at 2/3 is (560, 300).
            let small = try #require(frameWidths.indices.filter { frameWidths[$0] == 640 }.dropFirst(5).first,
                                     "no 640-wide picture past the first five")
            let picture = try decodedRGB(path, at: frameTimes[small])
            #expect(picture.count == 640 * 360 * 3, "picture \(small) has \(picture.count) bytes")
            let centre = pixel(picture, width: 640, 560, 300)
            #expect(near(centre, Self.green), "the square's centre scaled to (560, 300): \(centre)")
            for (x, y) in [(500, 300), (560, 240), (100, 100), (320, 180)] {
                #expect(near(pixel(picture, width: 640, x, y), Self.grey),
                        "grey at (\(x), \(y)) around the scaled square: \(pixel(picture, width: 640, x, y))")
            }
            // The full-size pictures after the recovery have it at its own place again.
            let large = try #require(frameWidths.indices.last { frameWidths[$0] == 960 })
            let last = try decodedRGB(path, at: frameTimes[large])
            #expect(near(pixel(last, width: 960, 840, 450), Self.green), "\(pixel(last, width: 960, 840, 450))")
        }

        /// What livepush-capture sent after a CONFIG asking 640x360 of the 960x540 region: the
        /// capability granted or not, the last frame's size and its pixels at a few points (RGB).
        private struct ScaledGrab {
            var granted = false
            var width = 0
            var height = 0
            var samples: [String: (r: Int, g: Int, b: Int)] = [:]
        }

        private func grabAt640x360(scale: String, points: [(x: Int, y: Int)]) throws -> ScaledGrab {
            let runtime = privateRuntimeDirectory()
            let seen = Mutex(ScaledGrab())
            let box = Mutex<PusherEndpoint?>(nil)
            var configuration = PusherEndpointConfiguration(group: "scale")
            configuration.runtimeDirectory = runtime
            let endpoint = try PusherEndpoint(configuration: configuration) { event in
                if case .connected(let info) = event { seen.withLock { $0.granted = info.capabilities.contains(.scale) } }
                guard case .frame = event, let frame = box.withLock({ $0 })?.acquireLatestFrame() else { return }
                defer { frame.release() }
                let info = frame.info
                var samples: [String: (r: Int, g: Int, b: Int)] = [:]
                frame.withPlanes { planes in
                    for point in points where point.x < info.width && point.y < info.height {
                        let offset = point.y * info.strides[0] + point.x * 4  // B G R x
                        samples["\(point.x),\(point.y)"] = (Int(planes[0][offset + 2]), Int(planes[0][offset + 1]),
                                                            Int(planes[0][offset]))
                    }
                }
                seen.withLock { $0.width = info.width; $0.height = info.height; $0.samples = samples }
            }
            box.withLock { $0 = endpoint }
            defer { endpoint.stop() }
            endpoint.requestMaxSize(width: 640, height: 360)
            let helper = try ProcessRunner.start(BuiltProducts.path("livepush-capture"), [
                "--group", "scale", "--display", try TestEnvironment.display(), "--region", "0,0,960,540",
                "--fps", "10", "--no-cursor", "--scale", scale,
            ], environment: ["XDG_RUNTIME_DIR": runtime])
            let wanted = scale == "crop" ? 960 : 640
            let arrived = waitUntil(timeoutSeconds: 15, intervalSeconds: 0.1) {
                seen.withLock { $0.width == wanted && !$0.samples.isEmpty }
            }
            endpoint.requestStop()
            let result = helper.finish()
            #expect(arrived, "no \(wanted)-wide frame with --scale \(scale): \(result)")
            #expect(result.exitCode == 0, "\(result)")
            return seen.withLock { $0 }
        }

        /// Both ways of scaling send the whole region at 640x360, the square at 2/3 of its place.
        @Test(arguments: ["render", "yuv"])
        func theHelperScalesTheWholeRegionToConfigsMaximum(scale: String) throws {
            let (background, _) = try X11Painter.start(["--geometry", "960x540+0+0", "solid", "404040"])
            defer { background.closeInput(); _ = background.finish() }
            let (square, _) = try X11Painter.start(["--geometry", "120x120+780+390", "solid", "00ff00"])
            defer { square.closeInput(); _ = square.finish() }
            let grab = try grabAt640x360(scale: scale, points: [(560, 300), (500, 300), (560, 240), (100, 100), (639, 359)])
            #expect(grab.granted, "LPC_CAP_SCALE granted")
            #expect(grab.width == 640 && grab.height == 360, "\(grab.width)x\(grab.height)")
            #expect(near(grab.samples["560,300"] ?? (-1, -1, -1), Self.green), "the square's centre: \(grab.samples)")
            for point in ["500,300", "560,240", "100,100", "639,359"] {
                #expect(near(grab.samples[point] ?? (-1, -1, -1), Self.grey), "grey at \(point): \(grab.samples)")
            }
        }

        /// `--scale crop`: the capability is not asked for, so the pusher never asks for less and
        /// the frames stay whole (960x540) although it wants 640x360.
        @Test func withScaleCropTheHelperIsNotGrantedItAndSendsFullFrames() throws {
            let (background, _) = try X11Painter.start(["--geometry", "960x540+0+0", "solid", "404040"])
            defer { background.closeInput(); _ = background.finish() }
            let (square, _) = try X11Painter.start(["--geometry", "120x120+780+390", "solid", "00ff00"])
            defer { square.closeInput(); _ = square.finish() }
            let grab = try grabAt640x360(scale: "crop", points: [(840, 450), (100, 100)])
            #expect(!grab.granted, "LPC_CAP_SCALE not granted with --scale crop")
            #expect(grab.width == 960 && grab.height == 540, "\(grab.width)x\(grab.height)")
            #expect(near(grab.samples["840,450"] ?? (-1, -1, -1), Self.green), "the square in place: \(grab.samples)")
        }
    }
}
