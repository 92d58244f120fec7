import Foundation
import LinuxSystem
import LivePush
import Testing
import TestSupport

/// The replay buffer from Swift (issue 34): `enableReplayBuffer`, `saveReplay`, `onReplaySaved`, with
/// pictures the test sends itself (`sendVideoFrame`), so that the marker's time is the test's own.
@Suite(.timeLimit(.minutes(10)))
struct ReplayBufferSDKTests {
    final class Saves: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var saved: [(code: Int32, path: String, durationMs: Int)] = []
        func onReplaySaved(code: Int32, path: String, durationMs: Int) { lock.withLock { saved.append((code, path, durationMs)) } }
        var all: [(code: Int32, path: String, durationMs: Int)] { lock.withLock { saved } }
    }

    /// A 320x240 BGRA picture of one grey level.
    private func send(_ pusher: LivePusher, level: UInt8, ptsNs: UInt64) -> Int32 {
        let plane = [UInt8](repeating: level, count: 320 * 240 * 4)
        return plane.withUnsafeBytes {
            pusher.sendVideoFrame(ExternalVideoFrame(format: .bgra, width: 320, height: 240, planes: [$0], strides: [320 * 4],
                                                     ptsNs: ptsNs))
        }
    }

    /// The marker's tone, apart from anything else in the mix (nothing else here): 3 kHz.
    static let toneHz = 3000.0

    /// Grey pictures at 30 fps and silence, then one white picture and 100 ms of a 3 kHz tone at the
    /// same instant, 1.5 s more grey and silence, then two saves in a row: both files complete
    /// (`onReplaySaved` 0), at least the 2 s asked for, the white picture at the end minus its age
    /// within two pictures and the tone where the recording beside has it (within 21 ms). Before: the codes of a pusher without a
    /// buffer.
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
        try pusher.startExternalVideo(audio: true)
        // A recording of the same stream beside: the replay must place sound and pictures as it does.
        let recording = directory + "/recording.mkv"
        #expect(pusher.startLocalRecording(path: recording) == 0)

        let startNs = MonotonicClock.nowNs()
        let whiteNs = startNs + 105 * 33_333_333
        for index in 0..<150 {  // 5 s at 30 fps: 3.5 s grey, one white picture, 1.5 s grey
            let tickNs = startNs + UInt64(index) * 33_333_333
            MonotonicClock.sleep(untilNs: tickNs)
            #expect(send(pusher, level: index == 105 ? 255 : 60, ptsNs: tickNs) == 0)
            // 1600 samples a picture at 48 kHz; the tone from the white picture's instant, 3 pictures long.
            let sound = (0..<1600).map { sample -> Float in
                guard (105..<108).contains(index) else { return 0 }
                return 0.5 * sin(2 * Float.pi * Float(Self.toneHz) * Float((index - 105) * 1600 + sample) / 48000)
            }
            #expect(pusher.sendPCM(.f32(sound), sampleRateHz: 48000, channels: 1, timestampNs: tickNs) == 0)
        }
        let first = directory + "/first.mkv", second = directory + "/second.mp4"
        let savedNs = MonotonicClock.nowNs()
        #expect(pusher.saveReplay(path: first) == 0)
        #expect(pusher.saveReplay(path: second) == 0)
        #expect(pusher.saveReplay(path: first) == ReplayCode.fileExists, "the file a queued save writes")
        #expect(pusher.saveReplay(path: directory + "/clip.txt") == ReplayCode.unsupportedExtension)
        #expect(pusher.saveReplay(path: directory + "/missing/clip.mkv") == ReplayCode.noPermission)
        // Two saves to the default name at once: two names (the second one numbered when in the same second).
        let named = [pusher.saveReplayNamed(), pusher.saveReplayNamed()]
        #expect(named.allSatisfy { $0.code == 0 } && named[0].path != named[1].path, "\(named)")
        #expect(named.allSatisfy { $0.path.hasPrefix(directory + "/replay-") })
        #expect(waitUntil(timeoutSeconds: 3) { pusher.statistics.replayBufferBytes > 0 }, "the statistics show the buffer")
        #expect(waitUntil(timeoutSeconds: 10) { observer.all.count >= 4 }, "\(observer.all)")
        #expect(named.allSatisfy { saved in observer.all.contains { $0.path == saved.path && $0.code == 0 } }, "\(observer.all)")
        let ageS = Double(savedNs - whiteNs) / 1e9
        pusher.stopLocalRecording()
        let recordedWhiteS = try #require(try MarkerProbe.lumas(recording).first { $0.luma > 200 }?.timeS, "no white picture recorded")
        let recordedToneS = try #require(try MarkerProbe.toneStartS(recording, frequencyHz: Self.toneHz), "no tone recorded")
        let recordedOffsetS = recordedToneS - recordedWhiteS
        for (index, file) in [first, second].enumerated() {
            let saved = try #require(observer.all.first { $0.path == file }, "\(observer.all)")
            #expect(saved.code == 0, "\(saved)")
            let frames = try MarkerProbe.lumas(file)
            let lastS = try #require(frames.last?.timeS), endS = lastS + 1.0 / 30
            let whiteS = try #require(frames.first { $0.luma > 200 }?.timeS, "no white picture in \(file)")
            print("replay (SDK) \(index): \(frames.count) pictures to \(endS) s (onReplaySaved \(saved.durationMs) ms); white at "
                + "\(whiteS) s, end minus \(endS - whiteS) s, its age \(ageS) s")
            #expect(lastS >= 2 - 0.001, "\(file) holds \(endS) s")
            #expect(abs(Double(saved.durationMs) / 1000 - endS) < 0.05)
            // Shown from the tick after it came, encoded when the save came: within two pictures.
            #expect(abs((endS - whiteS) - ageS) <= 2.0 / 30, "white at \(whiteS) s, expected \(endS - ageS) s")
            let toneS = try #require(try MarkerProbe.toneStartS(file, frequencyHz: Self.toneHz), "no tone in \(file)")
            print("replay (SDK) \(index): tone at \(toneS) s, \(Int((toneS - whiteS) * 1000)) ms from the white picture; "
                + "in the recording beside \(Int(recordedOffsetS * 1000)) ms")
            // As in the recording of the same stream (within one AAC packet, 21 ms), and within the
            // pipeline's own bound: 40 ms, one picture more on the picture's side (OneClockTests).
            #expect(abs((toneS - whiteS) - recordedOffsetS) <= 0.022, "tone \(toneS - whiteS) s from the picture, recorded \(recordedOffsetS) s")
            #expect(toneS - whiteS >= -0.04 - 1.0 / 30 && toneS - whiteS <= 0.04, "tone at \(toneS) s, the white picture at \(whiteS) s")
        }
        pusher.disableReplayBuffer()
        #expect(pusher.status.replayBufferSeconds == nil)
        #expect(pusher.saveReplay(path: directory + "/after.mkv") == ReplayCode.notEnabled)
    }
}
