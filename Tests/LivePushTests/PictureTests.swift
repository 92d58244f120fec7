import Foundation
import LivePush
import Media
import Testing
import TestSupport

/// The picture path (issue 16): watermarks, the video hook, snapshots and the push mirror, each
/// measured in what nginx received, decoded by ffmpeg. The helper paints the whole screen one
/// grey (BGRx 40); the output is 320x240.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct PictureTests {
    static let width = 320, height = 240, grey = 40

    final class Recorder: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var framesProcessed = 0
        var framesAfterMark: Int?
        var drawSquare = false
        var snapshot: (image: [UInt8]?, error: String?)?
        var errors: [Int32] = []
        var lastStatistics = LivePusherStatistics()
        func onProcessVideoFrame(_ frame: inout VideoProcessFrame) {
            let draw = lock.withLock { () -> Bool in
                framesProcessed += 1
                if let after = framesAfterMark { framesAfterMark = after + 1 }
                return drawSquare
            }
            guard draw else { return }
            // A white square, 32x32 at (16, 16): Y 235, U and V neutral.
            for row in 16..<48 {
                for column in 16..<48 { frame.y[row * frame.yStride + column] = 235 }
            }
            for row in 8..<24 {
                for column in 8..<24 {
                    frame.u[row * frame.uStride + column] = 128
                    frame.v[row * frame.vStride + column] = 128
                }
            }
        }
        func onSnapshotComplete(image: [UInt8]?, error: String?) { lock.withLock { snapshot = (image, error) } }
        func onError(code: Int32, message: String, extraInfo: [String: String]) { lock.withLock { errors.append(code) } }
        var warnings: [(code: Int32, message: String)] = []
        func onWarning(code: Int32, message: String, extraInfo: [String: String]) {
            lock.withLock { warnings.append((code, message)) }
        }
        func onStatisticsUpdate(_ statistics: LivePusherStatistics) { lock.withLock { lastStatistics = statistics } }
        /// Starts counting the pictures processed from now on.
        func mark() { lock.withLock { framesAfterMark = 0 } }
        var sinceMark: Int { lock.withLock { framesAfterMark ?? 0 } }
    }

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: Self.width, height: Self.height)
        config.fps = 15
        return config
    }

    private func temporary(_ name: String, _ ext: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(name)).path + "." + ext
    }

    /// A picture file made by ffmpeg from a lavfi source and filters.
    private func image(_ source: String, filters: String? = nil, ext: String = "png") throws -> String {
        let path = temporary("mark", ext)
        var arguments = ["-nostdin", "-v", "error", "-f", "lavfi", "-i", source]
        if let filters { arguments += ["-vf", filters] }
        let made = try ProcessRunner.run("ffmpeg", arguments + ["-frames:v", "1", path])
        #expect(made.exitCode == 0, "\(made)")
        return path
    }

    private func waitUntil(_ what: String, timeoutSeconds: Double = 20, _ condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while !condition() && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(condition(), "timed out waiting for \(what)")
    }

    /// A pusher with a grey helper, pushing to nginx's recording application, the hook counting
    /// pictures; `steps` runs while it is live. Returns the received FLV's path once nginx has it all.
    private func broadcast(_ recorder: Recorder, configure: (inout LivePushConfig) -> Void = { _ in },
                           _ steps: (LivePusher) throws -> Void) throws -> String
    {
        var settings = config()
        configure(&settings)
        let key = UniqueName.make("picture")
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("picture")
        let pusher = try LivePusher(config: settings, observer: recorder)
        pusher.enableCustomVideoProcess(true)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime, audio: false)
        let helper = SignalHelper(group: group, runtime: runtime, picture: { _ in UInt8(Self.grey) }, sound: { _ in 0 })
        helper.start()
        #expect(pusher.startPush(url: try TestEnvironment.recordURL(key: key)) == 0)
        waitUntil("the push to publish") { pusher.status.destinations.first?.status == .connectSuccess }
        try steps(pusher)
        helper.stop()
        pusher.destroy()
        let path = try TestEnvironment.recordedFile(key: key).path
        waitUntil("nginx's recording") { (try? MediaProbe.packetCount(path)) ?? 0 > 10 }
        return path
    }

    /// Lets `frames` more pictures go out.
    private func run(_ recorder: Recorder, frames: Int) {
        recorder.mark()
        waitUntil("\(frames) pictures") { recorder.sinceMark >= frames }
    }

    /// The RGB of pixel (x, y) of a decoded RGB24 picture of the output size.
    private func pixel(_ rgb: [UInt8], _ x: Int, _ y: Int) -> (r: Int, g: Int, b: Int) {
        let index = (y * Self.width + x) * 3
        return (Int(rgb[index]), Int(rgb[index + 1]), Int(rgb[index + 2]))
    }

    private func near(_ value: (r: Int, g: Int, b: Int), _ expected: (Int, Int, Int), levels: Int = 16) -> Bool {
        abs(value.r - expected.0) <= levels && abs(value.g - expected.1) <= levels && abs(value.b - expected.2) <= levels
    }

    /// Where along row `y` (or column `x`) the red of a watermark starts and ends.
    private func redSpan(_ rgb: [UInt8], row y: Int) -> ClosedRange<Int>? {
        let red = (0..<Self.width).filter { pixel(rgb, $0, y).r > 150 && pixel(rgb, $0, y).g < 90 }
        guard let first = red.first, let last = red.last else { return nil }
        return first...last
    }

    private func redSpan(_ rgb: [UInt8], column x: Int) -> ClosedRange<Int>? {
        let red = (0..<Self.height).filter { pixel(rgb, x, $0).r > 150 && pixel(rgb, x, $0).g < 90 }
        guard let first = red.first, let last = red.last else { return nil }
        return first...last
    }

    private func decodedFrameCount(_ path: String) throws -> Int { try MediaProbe.decodedFrameCount(path) }

    @Test func aWatermarkArrivesInItsColourAndPlaceAndLeavesWhenRemovedLive() throws {
        let red = try image("color=c=red:s=64x32")
        defer { try? FileManager.default.removeItem(atPath: red) }
        let recorder = Recorder()
        var id: Int32 = 0
        let path = try broadcast(recorder) { pusher in
            id = pusher.addWatermark(path: red, x: 0.5, y: 0.25, width: 0.25)
            #expect(id > 0)
            run(recorder, frames: 30)
            #expect(pusher.removeWatermark(id: id) == 0)
            #expect(pusher.removeWatermark(id: id) == LivePushErrorCode.watermarkNotFound)
            run(recorder, frames: 30)
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let count = try decodedFrameCount(path)
        #expect(count >= 50, "\(count) frames")
        // While it was on: x 0.5, y 0.25, width 0.25 of 320x240 -> (160, 60), 80 wide, 40 high (64x32's aspect).
        let on = try MediaProbe.decodedRGB(path, frame: count / 2 - 8)
        #expect(near(pixel(on, 200, 80), (255, 0, 0)), "inside: \(pixel(on, 200, 80))")
        #expect(near(pixel(on, 100, 80), (Self.grey, Self.grey, Self.grey)), "outside: \(pixel(on, 100, 80))")
        let across = try #require(redSpan(on, row: 80)), down = try #require(redSpan(on, column: 200))
        #expect(abs(across.lowerBound - 160) <= 2 && abs(across.upperBound - 239) <= 2, "columns \(across)")
        #expect(abs(down.lowerBound - 60) <= 2 && abs(down.upperBound - 99) <= 2, "rows \(down)")
        // After removal: the grey screen there again.
        let off = try MediaProbe.decodedRGB(path, frame: count - 2)
        #expect(near(pixel(off, 200, 80), (Self.grey, Self.grey, Self.grey)), "removed: \(pixel(off, 200, 80))")
    }

    @Test func opacityAndThePNGsAlphaMixTheWatermarkWithThePicture() throws {
        // Left half opaque red, right half transparent.
        let halfRed = try image("color=c=red:s=64x32", filters: "format=rgba,geq=r=255:g=0:b=0:a='if(lt(X,32),255,0)'")
        defer { try? FileManager.default.removeItem(atPath: halfRed) }
        let recorder = Recorder()
        let path = try broadcast(recorder) { pusher in
            #expect(pusher.addWatermark(path: halfRed, x: 0.1, y: 0.5, width: 0.4, opacity: 0.5) > 0)
            run(recorder, frames: 30)
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rgb = try MediaProbe.decodedRGB(path, frame: try decodedFrameCount(path) - 2)
        // (32, 120) to (160, 184): half of the red over the grey on the left, the grey alone on the right.
        let mixed = (255 / 2 + Self.grey / 2, Self.grey / 2, Self.grey / 2)
        #expect(near(pixel(rgb, 64, 150), mixed), "half opaque: \(pixel(rgb, 64, 150)), expected \(mixed)")
        #expect(near(pixel(rgb, 130, 150), (Self.grey, Self.grey, Self.grey)), "transparent: \(pixel(rgb, 130, 150))")
    }

    @Test func aWatermarkThatIsNoPictureOrOutsideThePictureIsRefusedWithItsCode() throws {
        let notPicture = temporary("notpicture", "png")
        FileManager.default.createFile(atPath: notPicture, contents: Data("not a picture".utf8))
        defer { try? FileManager.default.removeItem(atPath: notPicture) }
        let recorder = Recorder()
        let pusher = try LivePusher(config: config(), observer: recorder)
        #expect(pusher.addWatermark(path: notPicture, x: 0, y: 0, width: 0.2) == LivePushErrorCode.watermarkUnreadable)
        #expect(pusher.addWatermark(path: notPicture, x: 1.5, y: 0, width: 0.2) == LivePushErrorCode.watermarkInvalid)
        pusher.destroy()
        #expect(recorder.lock.withLock { recorder.errors } == [LivePushErrorCode.watermarkUnreadable,
                                                               LivePushErrorCode.watermarkInvalid])
        #expect(throws: LivePushConfigError.self) { try WatermarkFile(parsing: "logo.png@0.1,0.2") }
        #expect(try WatermarkFile(parsing: "my@logo.png@0.1,0.2,0.3,0.5")
            == WatermarkFile(path: "my@logo.png", position: WatermarkPosition(x: 0.1, y: 0.2, width: 0.3, opacity: 0.5)))
    }

    @Test func aConfiguredWatermarkThatCannotBeReadIsAWarningAndPicturesGoOn() throws {
        var settings = config()
        settings.watermarks = [WatermarkFile(path: "/nonexistent/logo.png", position: WatermarkPosition(x: 0, y: 0, width: 0.2))]
        let recorder = Recorder()
        let pusher = try LivePusher(config: settings, observer: recorder)
        try pusher.startScreenCapture(group: UniqueName.make("badmark"), runtimeDirectory: privateRuntimeDirectory(),
                                      audio: false)
        let png = pusher.snapshotPNG()
        pusher.destroy()
        #expect(throws: Never.self) { try png.get() }
        let warnings = recorder.lock.withLock { recorder.warnings }
        #expect(warnings.map(\.code) == [LivePushWarningCode.watermarkUnreadable], "\(warnings)")
        #expect(warnings.first?.message.contains("/nonexistent/logo.png") == true, "\(warnings)")
        #expect(pusher.watermarks.isEmpty)
    }

    @Test func theHooksDrawingArrivesAtTheReceiverAndItsTimeIsInTheStatistics() throws {
        let recorder = Recorder()
        let path = try broadcast(recorder) { _ in
            recorder.lock.withLock { recorder.drawSquare = true }
            run(recorder, frames: 30)
            waitUntil("a statistics tick with the hook's time") {
                recorder.lock.withLock { recorder.lastStatistics.videoProcessMs > 0 }
            }
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rgb = try MediaProbe.decodedRGB(path, frame: try decodedFrameCount(path) - 2)
        #expect(near(pixel(rgb, 32, 32), (255, 255, 255)), "the square: \(pixel(rgb, 32, 32))")
        #expect(near(pixel(rgb, 64, 64), (Self.grey, Self.grey, Self.grey)), "beside it: \(pixel(rgb, 64, 64))")
    }

    @Test func theSnapshotIsAPNGOfWhatTheReceiverGot() throws {
        let red = try image("color=c=red:s=64x32")
        defer { try? FileManager.default.removeItem(atPath: red) }
        let png = temporary("snapshot", "png")
        defer { try? FileManager.default.removeItem(atPath: png) }
        let recorder = Recorder()
        let path = try broadcast(recorder) { pusher in
            #expect(pusher.addWatermark(path: red, x: 0.5, y: 0.5, width: 0.25) > 0)
            run(recorder, frames: 15)
            #expect(pusher.snapshot() == 0)
            waitUntil("onSnapshotComplete") { recorder.lock.withLock { recorder.snapshot != nil } }
            run(recorder, frames: 15)
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let snapshot = try #require(recorder.lock.withLock { recorder.snapshot })
        #expect(snapshot.error == nil)
        let bytes = try #require(snapshot.image)
        #expect(Array(bytes.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "a PNG signature")
        FileManager.default.createFile(atPath: png, contents: Data(bytes))
        #expect(try MediaProbe.videoStream(png)["codec_name"] == "png")
        let still = try MediaProbe.decodedRGB(png, frame: 0)
        let received = try MediaProbe.decodedRGB(path, frame: try decodedFrameCount(path) - 2)
        #expect(still.count == received.count, "\(still.count) and \(received.count) bytes")
        let meanDifference = zip(still, received).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) } / max(1, still.count)
        #expect(meanDifference <= 4, "the snapshot differs from the stream by \(meanDifference) levels on average")
        #expect(near(pixel(still, 200, 140), (255, 0, 0)), "the watermark in the snapshot: \(pixel(still, 200, 140))")
    }

    @Test func thePushMirrorSwapsTheStreamsLeftAndRightButNotTheWatermarks() throws {
        // The pause image: white on its left half, black on its right.
        let pauseImage = try image("color=c=black:s=64x48", filters: "drawbox=x=0:y=0:w=32:h=48:color=white:t=fill")
        let red = try image("color=c=red:s=64x32")
        defer {
            try? FileManager.default.removeItem(atPath: pauseImage)
            try? FileManager.default.removeItem(atPath: red)
        }
        let recorder = Recorder()
        let path = try broadcast(recorder, configure: { $0.pauseImagePath = pauseImage; $0.scaleMode = .fill }) { pusher in
            pusher.pause()
            #expect(pusher.addWatermark(path: red, x: 0, y: 0, width: 0.25) > 0)
            pusher.setPushMirror(true)
            run(recorder, frames: 30)
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rgb = try MediaProbe.decodedRGB(path, frame: try decodedFrameCount(path) - 2)
        #expect(near(pixel(rgb, 40, 200), (0, 0, 0)), "left, mirrored black: \(pixel(rgb, 40, 200))")
        #expect(near(pixel(rgb, 280, 200), (255, 255, 255)), "right, mirrored white: \(pixel(rgb, 280, 200))")
        #expect(near(pixel(rgb, 20, 10), (255, 0, 0)), "the watermark stays top left: \(pixel(rgb, 20, 10))")
    }
}
