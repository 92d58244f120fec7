import Foundation
import LinuxSystem
import LivePush
import Testing
import TestSupport

/// The replay buffer from Swift (issue 34): `enableReplayBuffer`, `saveReplay`, `onReplaySaved`, with
/// pictures the test sends itself (`sendVideoFrame`), so that the marker's time is the test's own.
@Suite(.timeLimit(.minutes(5)))
struct ReplayBufferSDKTests {
    final class Saves: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var saved: [(code: Int32, path: String, durationMs: Int)] = []
        func onReplaySaved(code: Int32, path: String, durationMs: Int) { lock.withLock { saved.append((code, path, durationMs)) } }
        var all: [(code: Int32, path: String, durationMs: Int)] { lock.withLock { saved } }
    }

    /// A 320x240 BGRA picture of one grey level.
    private func send(_ pusher: LivePusher, level: UInt8) -> Int32 {
        let plane = [UInt8](repeating: level, count: 320 * 240 * 4)
        return plane.withUnsafeBytes {
            pusher.sendVideoFrame(ExternalVideoFrame(format: .bgra, width: 320, height: 240, planes: [$0], strides: [320 * 4],
                                                     ptsNs: MonotonicClock.nowNs()))
        }
    }

    /// Each picture's time and brightness, from ffprobe's signalstats.
    private func lumas(_ path: String) throws -> [(timeS: Double, luma: Double)] {
        let stats = try ProcessRunner.run("ffprobe", ["-v", "error", "-f", "lavfi", "-i", "movie=\(path),signalstats",
                                                      "-show_entries", "frame=pts_time:frame_tags=lavfi.signalstats.YAVG",
                                                      "-of", "csv=p=0"])
        #expect(stats.exitCode == 0, "\(stats)")
        return stats.standardOutput.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let time = Double(fields[0]), let luma = Double(fields[1]) else { return nil }
            return (time, luma)
        }
    }

    /// Grey pictures at 30 fps, one white one, 1.5 s more grey, then two saves in a row: both files
    /// complete (`onReplaySaved` 0), at least the 2 s asked for, and the white picture at the end
    /// minus its age within two pictures. Before: the codes of a pusher without a buffer.
    @Test func aReplayHoldsTheWhitePictureAtItsAge() throws {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 30
        let observer = Saves()
        let pusher = try LivePusher(config: config, observer: observer)
        defer { pusher.destroy() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("replaysdk")).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(pusher.saveReplay(path: directory + "/none.mkv") == ReplayCode.notEnabled)
        #expect(pusher.enableReplayBuffer(seconds: 0) == LivePushErrorCode.invalidParameter)
        #expect(pusher.enableReplayBuffer(seconds: 601) == LivePushErrorCode.invalidParameter)
        #expect(pusher.enableReplayBuffer(seconds: 2, directory: directory) == 0)
        #expect(pusher.status.replayBufferSeconds == 2)
        #expect(pusher.saveReplay(path: directory + "/early.mkv") == ReplayCode.internalError, "capture not running")
        try pusher.startExternalVideo(audio: false)

        let startNs = MonotonicClock.nowNs()
        var whiteNs: UInt64 = 0
        for index in 0..<150 {  // 5 s at 30 fps: 3.5 s grey, one white picture, 1.5 s grey
            MonotonicClock.sleep(untilNs: startNs + UInt64(index) * 33_333_333)
            if index == 105 { whiteNs = MonotonicClock.nowNs() }
            #expect(send(pusher, level: index == 105 ? 255 : 60) == 0)
        }
        let first = directory + "/first.mkv", second = directory + "/second.mp4"
        let savedNs = MonotonicClock.nowNs()
        #expect(pusher.saveReplay(path: first) == 0)
        #expect(pusher.saveReplay(path: second) == 0)
        #expect(pusher.saveReplay(path: first) == ReplayCode.fileExists, "the file a queued save writes")
        #expect(pusher.saveReplay(path: directory + "/clip.txt") == ReplayCode.unsupportedExtension)
        #expect(pusher.saveReplay(path: directory + "/missing/clip.mkv") == ReplayCode.noPermission)
        #expect(waitUntil(timeoutSeconds: 3) { pusher.statistics.replayBufferBytes > 0 }, "the statistics show the buffer")
        #expect(waitUntil(timeoutSeconds: 10) { observer.all.count >= 2 }, "\(observer.all)")
        let ageS = Double(savedNs - whiteNs) / 1e9
        for (index, file) in [first, second].enumerated() {
            let saved = try #require(observer.all.first { $0.path == file }, "\(observer.all)")
            #expect(saved.code == 0, "\(saved)")
            let frames = try lumas(file)
            let lastS = try #require(frames.last?.timeS), endS = lastS + 1.0 / 30
            let whiteS = try #require(frames.first { $0.luma > 200 }?.timeS, "no white picture in \(file)")
            print("replay (SDK) \(index): \(frames.count) pictures to \(endS) s (onReplaySaved \(saved.durationMs) ms); white at "
                + "\(whiteS) s, end minus \(endS - whiteS) s, its age \(ageS) s")
            #expect(lastS >= 2 - 0.001, "\(file) holds \(endS) s")
            #expect(abs(Double(saved.durationMs) / 1000 - endS) < 0.05)
            // Shown from the tick after it came, encoded when the save came: within two pictures.
            #expect(abs((endS - whiteS) - ageS) <= 2.0 / 30, "white at \(whiteS) s, expected \(endS - ageS) s")
        }
        pusher.disableReplayBuffer()
        #expect(pusher.status.replayBufferSeconds == nil)
        #expect(pusher.saveReplay(path: directory + "/after.mkv") == ReplayCode.notEnabled)
    }
}
