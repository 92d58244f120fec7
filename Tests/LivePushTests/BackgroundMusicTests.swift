import CaptureLink
import Foundation
import LinuxSystem
import LivePush
import Synchronization
import Testing
import TestSupport

/// Background music and external PCM, measured in what nginx received (issue 17): music files
/// of each format made by ffmpeg carry a 600 Hz tone at a known level; the stream must carry it
/// at the set volume (±1 dB) and, looping, without a gap over 25 ms.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct BackgroundMusicTests {
    final class Recorder: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var events: [String] = []
        var progress: [(positionMs: Int, durationMs: Int)] = []
        var errors: [(code: Int32, message: String)] = []
        func onBGMStarted(path: String, durationMs: Int) { lock.withLock { events.append("started(\(durationMs / 100))") } }
        func onBGMProgress(positionMs: Int, durationMs: Int) { lock.withLock { progress.append((positionMs, durationMs)) } }
        func onBGMComplete(path: String) { lock.withLock { events.append("complete") } }
        func onBGMError(code: Int32, message: String, path: String) {
            lock.withLock { events.append("bgmError(\(code))"); errors.append((code, message)) }
        }
        func onError(code: Int32, message: String, extraInfo: [String: String]) { lock.withLock { events.append("error(\(code))") } }
    }

    /// A 0.5-peak sine: −9.03 dBFS as rmsDbfs counts it; at 50 % volume −15.05 dBFS.
    static let amplitude = 0.5
    static let halfVolumeDbfs = 20 * log10(amplitude / 2.squareRoot()) - 6.02

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 15
        return config
    }

    /// Pushes `seconds` of a black screen with no microphone to nginx; `setUp` runs once
    /// screen capture (and its audio pipeline) runs. Returns the key.
    private func push(seconds: Double, observer: Recorder, setUp: (LivePusher) -> Void) throws -> String {
        let key = UniqueName.make("bgm")
        let pusher = try LivePusher(config: config(), observer: observer)
        try pusher.startScreenCapture(group: UniqueName.make("bgm"), runtimeDirectory: privateRuntimeDirectory())
        #expect(pusher.startPush(url: try TestEnvironment.recordURL(key: key)) == 0)
        setUp(pusher)
        let endNs = MonotonicClock.nowNs() + UInt64(seconds * 1e9)
        MonotonicClock.sleep(untilNs: endNs)
        pusher.destroy()
        return key
    }

    static let formats: [(ext: String, codec: String)] = [
        ("mp3", "libmp3lame"), ("m4a", "aac"), ("flac", "flac"), ("ogg", "libvorbis"), ("opus", "libopus"), ("wav", "pcm_s16le"),
    ]

    @Test(arguments: formats.map { "\($0.ext):\($0.codec)" })
    func loopedMusicArrivesAtItsVolumeWithoutGaps(_ format: String) throws {
        let parts = format.split(separator: ":").map(String.init)
        let rate = parts[0] == "opus" ? 48000 : 44100
        let file = try SoundSignals.toneFile(ext: parts[0], codec: parts[1], frequencyHz: 600, amplitude: Self.amplitude,
                                             seconds: 2.6, sampleRateHz: rate)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let observer = Recorder()
        let key = try push(seconds: 6.5, observer: observer) { pusher in
            pusher.setBGMVolume(50)
            #expect(pusher.startBGM(path: file, loop: true) == 0)
        }
        let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 6)
        try #require(received.count >= 48000 * 6, "\(received.count) samples reached nginx")
        // The music starts with the stream: its first second away from the start, then the
        // loop's joins at 2.6 and 5.2 s.
        let level = AudioAnalysis.toneLevelDbfs(Array(received[12000..<60000]), frequencyHz: 600, sampleRateHz: 48000)
        let music = Array(received[12000..<(48000 * 6)])
        #expect(abs(level - Self.halfVolumeDbfs) < 1, "\(format): 600 Hz at \(level) dBFS, expected \(Self.halfVolumeDbfs)")
        let gapMs = SoundSignals.longestGapMs(music, sampleRateHz: 48000, referenceDbfs: Self.halfVolumeDbfs)
        #expect(gapMs <= 25, "\(format): a gap of \(gapMs) ms in the looped music")
        let (events, progress) = observer.lock.withLock { (observer.events, observer.progress) }
        #expect(events == ["started(26)"], "\(events)")
        // Once a second: positions within the file's length; a loop starts again from 0.
        #expect(progress.count >= 6 && progress.allSatisfy { $0.positionMs <= 2600 && $0.durationMs / 100 == 26 },
                "\(progress)")
    }

    @Test func musicThatEndsSaysCompleteAndPauseIsSilence() throws {
        let file = try SoundSignals.toneFile(ext: "mp3", codec: "libmp3lame", frequencyHz: 600, amplitude: Self.amplitude,
                                             seconds: 2.5)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let observer = Recorder()
        let key = try push(seconds: 5, observer: observer) { pusher in
            #expect(pusher.startBGM(path: file) == 0)
            Thread.sleep(forTimeInterval: 1)  // let it run: 1 s of music (stream time 0-1 s)
            pusher.pauseBGM()
            #expect(!pusher.isBGMPlaying)
            Thread.sleep(forTimeInterval: 1)  // let it run: 1 s paused (stream time 1-2 s)
            pusher.resumeBGM()
        }
        let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 4.5)
        // Stream time: music 0-1 s, paused 1-2 s, music 2-3.5 s, then the end of the file.
        func level(_ from: Double, _ to: Double) -> Double {
            AudioAnalysis.rmsDbfs(Array(received[Int(from * 48000)..<min(received.count, Int(to * 48000))]))
        }
        let playing = level(0.3, 0.8), paused = level(1.3, 1.8), resumed = level(2.3, 2.8), ended = level(4.0, 4.4)
        #expect(playing > -12 && paused < -60 && resumed > -12 && ended < -60,
                "playing \(playing), paused \(paused), resumed \(resumed), ended \(ended) dBFS")
        #expect(observer.lock.withLock { observer.events } == ["started(25)", "complete"])
    }

    /// Issue 35: the reference SDKs' setBGMLoop is a setting. Set before the music starts it loops
    /// the first track, and the next track started without saying loops too.
    @Test func theLoopSetBeforeTheMusicHoldsForItAndTheNextTrack() throws {
        let first = try SoundSignals.toneFile(ext: "wav", codec: "pcm_s16le", frequencyHz: 600, amplitude: Self.amplitude,
                                              seconds: 1.0)
        let second = try SoundSignals.toneFile(ext: "wav", codec: "pcm_s16le", frequencyHz: 600, amplitude: Self.amplitude,
                                               seconds: 1.0)
        defer { [first, second].forEach { try? FileManager.default.removeItem(atPath: $0) } }
        let observer = Recorder()
        let loopSeen = Mutex<[Bool]>([])
        let key = try push(seconds: 5, observer: observer) { pusher in
            pusher.setBGMLoop(true)
            #expect(pusher.startBGM(path: first) == 0)
            Thread.sleep(forTimeInterval: 2)  // let it run: two passes of the first file (stream time 0-2 s)
            loopSeen.withLock { $0.append(pusher.isBGMPlaying) }
            #expect(pusher.startBGM(path: second) == 0)
            Thread.sleep(forTimeInterval: 2)  // two passes of the second (2-4 s)
            loopSeen.withLock { $0.append(pusher.isBGMPlaying && pusher.bgmLoop) }
        }
        let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 4.5)
        func level(_ from: Double, _ to: Double) -> Double {
            AudioAnalysis.rmsDbfs(Array(received[Int(from * 48000)..<min(received.count, Int(to * 48000))]))
        }
        // Past each file's 1 s end, the music goes on: the loop held for both.
        let firstAgain = level(1.3, 1.8), secondAgain = level(3.3, 3.8)
        #expect(firstAgain > -12 && secondAgain > -12, "after the end of the first file \(firstAgain), of the second \(secondAgain) dBFS")
        #expect(loopSeen.withLock { $0 } == [true, true], "playing at 2 s and at 4 s: \(loopSeen.withLock { $0 })")
        #expect(observer.lock.withLock { observer.events } == ["started(10)", "started(10)"], "no complete: both looped")
    }

    @Test func aMissingOrCorruptFileIsAnErrorAndTheBroadcastGoesOn() throws {
        let corrupt = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("corrupt")).path + ".mp3"
        _ = FileManager.default.createFile(atPath: corrupt, contents: Data((0..<20000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }))
        defer { try? FileManager.default.removeItem(atPath: corrupt) }
        let observer = Recorder()
        let key = try push(seconds: 3, observer: observer) { pusher in
            #expect(pusher.startBGM(path: "/nonexistent/song.mp3") == LivePushErrorCode.bgmFileUnreadable)
            #expect(pusher.startBGM(path: corrupt) == LivePushErrorCode.bgmFileUnreadable)
        }
        let code = LivePushErrorCode.bgmFileUnreadable
        let (events, errors) = observer.lock.withLock { (observer.events, observer.errors) }
        #expect(events == ["bgmError(\(code))", "error(\(code))", "bgmError(\(code))", "error(\(code))"], "\(events)")
        #expect(errors.first?.message.contains("does not exist") == true, "\(errors)")
        #expect(errors.last?.message.contains(corrupt) == true && errors.last?.message.contains("MP3") == true, "\(errors)")
        let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 2.5)
        #expect(received.count >= 48000 * 2, "the stream went on: \(received.count) samples reached nginx")
    }

    /// External PCM (S16 and F32, at other rates and channel counts than the stream's) is mixed
    /// at its volume.
    @Test(arguments: ["s16:44100:1", "f32:16000:2", "f32:48000:2", "s16:16000:1"])
    func externalPCMIsMixedAtItsVolume(_ format: String) throws {
        let observer = Recorder()
        let parts = format.split(separator: ":").map(String.init)
        let rate = Int(parts[1])!, channels = Int(parts[2])!
        let accepted = Mutex(0)
        let key = try push(seconds: 4, observer: observer) { pusher in
            pusher.setExternalAudioVolume(50)
            Thread.detachNewThread {
                let startNs = MonotonicClock.nowNs()
                var sent = 0
                while true {
                    // 10 ms blocks, each stamped with its first sample's time.
                    let count = rate / 100
                    var values: [Float] = []
                    for index in 0..<count {
                        let value = Float(Self.amplitude * sin(2 * Double.pi * 700 * Double(sent + index) / Double(rate)))
                        for _ in 0..<channels { values.append(value) }
                    }
                    let ptsNs = startNs + UInt64(sent) * 1_000_000_000 / UInt64(rate)
                    let samples: PCMSamples = parts[0] == "s16" ? .s16(values.map { Int16($0 * 32767) }) : .f32(values)
                    let code = pusher.sendPCM(samples, sampleRateHz: rate, channels: channels, timestampNs: ptsNs)
                    // −1 once the pusher is destroyed: the end of the test.
                    if code != 0 {
                        if code != -1 { observer.lock.withLock { observer.events.append("sendPCM(\(code))") } }
                        break
                    }
                    accepted.withLock { $0 += 1 }
                    sent += count
                    MonotonicClock.sleep(untilNs: startNs + UInt64(sent) * 1_000_000_000 / UInt64(rate))
                }
            }
            #expect(pusher.sendPCM(.f32([0, 0, 0]), sampleRateHz: 48000, channels: 2) == LivePushErrorCode.invalidParameter)
            #expect(pusher.sendPCM(.f32([0, 0]), sampleRateHz: 1000, channels: 2) == LivePushErrorCode.invalidParameter)
        }
        #expect(observer.lock.withLock { observer.events }.isEmpty)
        #expect(accepted.withLock { $0 } >= 300, "10 ms blocks accepted in 4 s")
        let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 3.5)
        let level = AudioAnalysis.toneLevelDbfs(Array(received.dropFirst(48000).prefix(48000)), frequencyHz: 700,
                                                sampleRateHz: 48000)
        #expect(abs(level - Self.halfVolumeDbfs) < 1, "\(format): 700 Hz at \(level) dBFS, expected \(Self.halfVolumeDbfs)")
        let gapMs = SoundSignals.longestGapMs(Array(received.dropFirst(48000).prefix(48000 * 2)), sampleRateHz: 48000,
                                              referenceDbfs: Self.halfVolumeDbfs)
        #expect(gapMs <= 25, "\(format): a gap of \(gapMs) ms in the external PCM")
    }
}
