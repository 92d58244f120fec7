import Foundation
import LivePush
import Testing
import TestSupport

/// Adaptive resolution through a throttled uplink (the tests' `ThrottlingProxy` in front of the
/// real nginx-rtmp): the size steps down once auto bitrate sits at its minimum, and back up when
/// the network recovers; what nginx recorded and the local recording decode across both changes.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct AutoResolutionTests {
    final class Sizes: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var warnings: [(code: Int32, extraInfo: [String: String])] = []
        func onWarning(code: Int32, message: String, extraInfo: [String: String]) {
            lock.withLock { warnings.append((code, extraInfo)) }
        }
        var sizeWarnings: [String] {
            lock.withLock {
                warnings.filter { $0.code == LivePushWarningCode.resolutionChanged }
                    .map { "\($0.extraInfo["width"] ?? "?")x\($0.extraInfo["height"] ?? "?")" }
            }
        }
    }


    /// The sizes of the decoded pictures of `path`, in order, each once per run; and ffmpeg's errors decoding it.
    private func decodedSizes(_ path: String) throws -> (sizes: [String], errors: String) {
        let frames = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                       "frame=width,height", "-of", "csv=p=0", path], timeoutSeconds: 120)
        var runs: [String] = []
        for line in frames.standardOutput.split(separator: "\n") {
            let size = line.split(separator: ",").prefix(2).joined(separator: "x")  // side data may add fields
            if runs.last != size { runs.append(size) }
        }
        let decode = try ProcessRunner.run(
            "ffmpeg", ["-v", "error", "-i", path, "-map", "0:v:0"] + MediaProbe.nullOutput,
            timeoutSeconds: 120)
        return (runs, decode.standardError + (decode.exitCode == 0 ? "" : " (exit \(decode.exitCode))"))
    }

    @Test func aCongestedNetworkAtTheMinimumBitrateStepsTheSizeDownAndARecoveredOneBackUp() throws {
        let port = UInt16(try TestEnvironment.value("LIVEPUSH_TEST_RTMP_URL", of: .rtmp).split(separator: ":").last ?? "") ?? 0
        let proxy = try ThrottlingProxy(targetPort: port, rateKbps: 150)
        defer { proxy.close() }
        var config = LivePushConfig()
        config.resolution = .size(width: 960, height: 540)
        config.fps = 15
        config.qualityMode = .custom
        config.targetVideoBitrateKbps = 700
        config.minVideoBitrateKbps = 300
        config.initialVideoBitrateKbps = 700
        config.enableAutoResolution = true
        config.networkPoorAfterMs = 60000
        let observer = Sizes()
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("autores")
        let pusher = try LivePusher(config: config, observer: observer)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let helper = SignalHelper(group: group, runtime: runtime, picture: { UInt8(Int($0 * 300) % 200 + 20) }, sound: { _ in 0 })
        helper.start()
        let key = UniqueName.make("autores")
        let recordingPath = NSTemporaryDirectory() + "\(key).mkv"
        defer { try? FileManager.default.removeItem(atPath: recordingPath) }
        #expect(pusher.startPush(url: "rtmp://127.0.0.1:\(proxy.port)/record/\(key)") == 0)
        #expect(pusher.startLocalRecording(path: recordingPath) == 0)

        let down = waitUntil(timeoutSeconds: 60) { pusher.statistics.width == 640 }
        #expect(down, "stepped down to 640x360: \(pusher.statistics.width)x\(pusher.statistics.height)")
        #expect(pusher.statistics.height == 360)
        Thread.sleep(forTimeInterval: 2)  // let it run: 2 s of frames at the small size (read back from the files)
        proxy.rateKbps = 0  // the network recovers
        let up = waitUntil(timeoutSeconds: 60) { pusher.statistics.width == 960 }
        #expect(up, "stepped back up to 960x540: \(pusher.statistics.width)x\(pusher.statistics.height)")
        Thread.sleep(forTimeInterval: 2)  // let it run: 2 s of frames at the full size (read back from the files)
        pusher.stopPush()
        pusher.stopLocalRecording()
        helper.stop()
        pusher.destroy()

        #expect(observer.sizeWarnings == ["640x360", "960x540"], "\(observer.sizeWarnings)")
        for (name, path) in [("nginx", try TestEnvironment.recordedFile(key: key).path), ("recording", recordingPath)] {
            let decoded = try decodedSizes(path)
            #expect(decoded.sizes == ["960x540", "640x360", "960x540"], "\(name): sizes decoded in order: \(decoded.sizes)")
            #expect(decoded.errors.isEmpty, "\(name): ffmpeg decodes across the changes without errors: \(decoded.errors)")
        }
    }
}
