import Foundation
import LivePush
import Testing
import TestSupport

/// Colour end to end, in every pixel format a helper may send: pure red, green, blue and white
/// bars (sRGB for the RGB formats, BT.709 limited range for NV12 and I420, as SPEC §8.1 says)
/// go through the pusher into a recording, and ffmpeg decodes the same primaries, within 4 levels.
@Suite(.timeLimit(.minutes(10))) struct ColourTests {
    final class Recorder: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var firstFrameAtMs: Int?
        var recordedMs = 0
        let completed = DispatchSemaphore(value: 0)
        func onCaptureFirstVideoFrame() { lock.withLock { firstFrameAtMs = recordedMs } }
        func onLocalRecording(durationMs: Int, storagePath: String) { lock.withLock { recordedMs = durationMs } }
        func onLocalRecordComplete(code: Int32, storagePath: String) { completed.signal() }
        /// Milliseconds recorded since the helper's first frame arrived (nil before it).
        var msSinceFirstFrame: Int? { lock.withLock { firstFrameAtMs.map { recordedMs - $0 } } }
    }

    static let bars: [(name: String, rgb: [Int])] = [
        ("red", [255, 0, 0]), ("green", [0, 255, 0]), ("blue", [0, 0, 255]), ("white", [255, 255, 255]),
    ]

    @Test(.timeLimit(.minutes(10)), arguments: ["bgrx", "bgra", "rgbx", "rgba", "nv12", "i420"])
    func primariesArriveAsSentInEveryPixelFormat(format: String) throws {
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("colour")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("colour")).path + ".mp4"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var config = LivePushConfig()
        config.resolution = .size(width: 640, height: 360)
        config.fps = 30
        let observer = Recorder()
        let pusher = try LivePusher(config: config, observer: observer)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        #expect(pusher.startLocalRecording(path: path, progressIntervalMs: 100) == 0)
        let helper = try ProcessRunner.start(try Repository.colourBarsHelper(), [
            "--group", group, "--format", format, "--frames", "100000",
        ], environment: ["XDG_RUNTIME_DIR": runtime])
        // 1.5 s of the helper's bars in the file, then the recording ends while they still arrive.
        let deadline = Date().addingTimeInterval(30)
        while (observer.msSinceFirstFrame ?? 0) < 1500 && helper.isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect((observer.msSinceFirstFrame ?? 0) >= 1500, "the helper's frames did not arrive: \(helper.errorSoFar)")
        pusher.stopLocalRecording()
        #expect(observer.completed.wait(timeout: .now() + 10) == .success)
        pusher.destroy()  // STOP: the helper finishes and exits 0 (a signal may be blocked in a test's children)
        let result = helper.finish()
        #expect(result.exitCode == 0, "\(result)")

        // Near the end: the recording starts before the helper connects (black until then).
        let frames = Int(try MediaProbe.videoStream(path)["nb_read_frames"] ?? "") ?? 0
        try #require(frames >= 10, "only \(frames) frames recorded")
        let rgb = try MediaProbe.decodedRGB(path, frame: frames - 5)
        try #require(rgb.count == 640 * 360 * 3, "decoded \(rgb.count) bytes")
        for (index, bar) in Self.bars.enumerated() {
            let x = index * 160 + 80, y = 180
            let offset = (y * 640 + x) * 3
            let got = [Int(rgb[offset]), Int(rgb[offset + 1]), Int(rgb[offset + 2])]
            #expect(zip(got, bar.rgb).allSatisfy { abs($0 - $1) <= 4 }, "\(format) \(bar.name): decoded \(got)")
        }
    }
}
