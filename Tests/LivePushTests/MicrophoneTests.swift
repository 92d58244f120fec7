import Foundation
import LivePush
import Testing
import TestSupport

/// The microphone through the test PipeWire daemon's virtual mic (a known tone), into
/// recordings and the real nginx-rtmp, read back with ffmpeg.
@Suite(.enabled(if: TestEnvironment.isEnabled(.pipewire) && TestEnvironment.isEnabled(.rtmp),
                "needs the test PipeWire daemon and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct MicrophoneTests {
    final class Recorder: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var events: [String] = []
        var levels: [Int] = []
        var messages: [String] = []
        var statistics = LivePusherStatistics()
        func onStatisticsUpdate(_ statistics: LivePusherStatistics) { lock.withLock { self.statistics = statistics } }
        func onWarning(code: Int32, message: String, extraInfo: [String: String]) {
            lock.withLock { events.append("warning(\(code))"); messages.append(message) }
        }
        func onCaptureFirstAudioFrame() { lock.withLock { events.append("firstAudioFrame") } }
        func onMicrophoneVolumeUpdate(volume: Int) { lock.withLock { levels.append(volume) } }
    }

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 30
        return config
    }

    /// A pusher with the microphone `name` (nil: the default source), recording and pushing
    /// `seconds` of a black screen.
    private func run(seconds: Double, microphone name: String? = nil, observer: Recorder, pushKey: String? = nil,
                     during: (LivePusher) -> Void = { _ in }) throws -> (path: String, micCode: Int32) {
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("mic")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("mic")).path + ".mkv"
        let pusher = try LivePusher(config: config(), observer: observer)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let micCode = pusher.startMicrophone(name: name)
        pusher.enableVolumeEvaluation(intervalMs: 300)
        #expect(pusher.startLocalRecording(path: path) == 0)
        if let pushKey { #expect(pusher.startPush(url: try TestEnvironment.recordURL(key: pushKey)) == 0) }
        Thread.sleep(forTimeInterval: 1)  // let it run: 1 s recorded before `during`
        during(pusher)
        Thread.sleep(forTimeInterval: seconds - 1)  // let it run: the rest of the `seconds` recorded
        pusher.destroy()
        return (path, micCode)
    }

    @Test func theMicsToneIsInTheRecordingAndInWhatNginxReceived() throws {
        let observer = Recorder()
        let key = UniqueName.make("mictone")
        let (path, code) = try run(seconds: 4, observer: observer, pushKey: key)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(code == 0)
        let toneHz = try TestEnvironment.toneHz()
        let recorded = try AudioAnalysis.decodeMono(path)
        #expect(abs(AudioAnalysis.dominantFrequencyHz(Array(recorded.dropFirst(24000)), sampleRateHz: 48000) - toneHz) < 2)
        let pushed = try AudioAnalysis.decodeMono(try TestEnvironment.closedRecording(key: key))
        #expect(pushed.count > 48000 * 2, "\(pushed.count) samples reached nginx")
        #expect(abs(AudioAnalysis.dominantFrequencyHz(Array(pushed.dropFirst(24000)), sampleRateHz: 48000) - toneHz) < 2)
        #expect(observer.lock.withLock { observer.events }.contains("firstAudioFrame"))
        // The virtual mic plays at about -18 dBFS: a level near 70 of 100 (-60 dBFS is 0).
        let levels = observer.lock.withLock { observer.levels }
        // Each of the last five: a chunk late for the mix is waited for (up to 250 ms); one later
        // still leaves a hole that lowers a report, and is then counted in `audioGapMs`.
        let gapMs = observer.lock.withLock { observer.statistics.audioGapMs }
        #expect(levels.count >= 8 && (levels.suffix(5).allSatisfy { (55...85).contains($0) } || gapMs > 0),
                "\(levels), \(gapMs) ms of holes counted")
    }

    @Test func captureVolumeMovesTheLevelByWhatItSays() throws {
        let observer = Recorder()
        let (path, _) = try run(seconds: 3, observer: observer, during: { $0.setCaptureVolume(25) })
        defer { try? FileManager.default.removeItem(atPath: path) }
        let samples = try AudioAnalysis.decodeMono(path)
        try #require(samples.count >= 2 * 48000, "\(samples.count) samples decoded from a 3 s recording")
        let full = AudioAnalysis.rmsDbfs(Array(samples[14400..<38400]))
        let quarter = AudioAnalysis.rmsDbfs(Array(samples.suffix(48000)))
        #expect(abs((full - quarter) - 12.04) < 1, "100 %: \(full) dBFS, 25 %: \(quarter) dBFS")
    }

    @Test func aMissingMicIsAWarningThatListsTheSourcesAndTheStreamGoesOnSilent() throws {
        let observer = Recorder()
        let (path, code) = try run(seconds: 2, microphone: "no-such-mic", observer: observer)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(code == -1)
        let (events, messages) = observer.lock.withLock { (observer.events, observer.messages.joined(separator: "\n")) }
        #expect(events.contains("warning(\(LivePushWarningCode.microphoneUnavailable))"), "\(events)")
        let testMic = try TestEnvironment.microphone()
        #expect(messages.contains("no-such-mic") && messages.contains(testMic), "\(messages)")
        let samples = try AudioAnalysis.decodeMono(path)
        #expect(samples.count > 48000 && AudioAnalysis.rmsDbfs(samples) < -80, "silent audio, \(samples.count) samples")
    }

    @Test func aMicThatGoesAwayIsAWarningWithSilenceAndComesBack() throws {
        let toneHz = 660.0
        let mic = try SignalMic(expression: "0.25*sin(2*PI*\(Int(toneHz))*t)", seconds: 60)
        let observer = Recorder()
        let key = UniqueName.make("miclost")
        let pusher = try LivePusher(config: config(), observer: observer)
        try pusher.startScreenCapture(group: UniqueName.make("miclost"), runtimeDirectory: privateRuntimeDirectory())
        #expect(pusher.startMicrophone(name: mic.name) == 0)
        #expect(pusher.startPush(url: try TestEnvironment.recordURL(key: key)) == 0)
        try mic.play()
        Thread.sleep(forTimeInterval: 2)  // let it run: 2 s of the tone before the mic goes
        mic.takeAway()
        func warned(_ code: Int32) -> Bool { observer.lock.withLock { observer.events }.contains("warning(\(code))") }
        let lost = waitUntil(timeoutSeconds: 15) { warned(LivePushWarningCode.microphoneLost) }
        Thread.sleep(forTimeInterval: 1.5)  // let it run: 1.5 s without the mic (the silence measured)
        try mic.bringBack()
        let returned = waitUntil(timeoutSeconds: 15) { warned(LivePushWarningCode.microphoneReturned) }
        Thread.sleep(forTimeInterval: 2)  // let it run: 2 s of the tone after the return (measured)
        pusher.destroy()
        // A stall of the pusher on a busy machine (1105) is named too; it is not this test's subject.
        let warnings = observer.lock.withLock { observer.events }.filter {
            $0.hasPrefix("warning") && $0 != "warning(\(LivePushWarningCode.pusherStalled))"
        }
        #expect(lost && returned && warnings == ["warning(\(LivePushWarningCode.microphoneLost))",
                                                 "warning(\(LivePushWarningCode.microphoneReturned))"], "\(warnings)")
        // At nginx: every AAC frame, 1024 samples (21.3 ms) apart, across the loss; decoded, the
        // tone, then silence, then the tone again to the end.
        let file = try TestEnvironment.closedRecording(key: key)
        let times = try PushNetworkTests().packetTimesMs(file, stream: "a:0")
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(times.count > 250, "\(times.count) audio packets reached nginx, fewer than 5 s")
        #expect(gaps.allSatisfy { (20...23).contains($0) }, "audio gaps at nginx: \(gaps.filter { !(20...23).contains($0) })")
        let samples = try AudioAnalysis.decodeMono(file)
        let spanSamples = (times.last ?? 0) - (times.first ?? 0)
        #expect(abs(samples.count / 48 - spanSamples) <= 100,
                "\(samples.count / 48) ms decoded for \(spanSamples) ms of audio packets")
        // Each 100 ms: the tone (above -30 dBFS), silence (under -60 dBFS) or neither (an edge).
        let windows = stride(from: 0, to: samples.count - 4800 + 1, by: 4800).map { start in
            let level = AudioAnalysis.rmsDbfs(Array(samples[start..<start + 4800]))
            return level > -30 ? "T" : level < -60 ? "s" : "?"
        }.joined()
        print("mic-lost test: 100 ms windows at nginx (T tone, s silence): \(windows)")
        #expect(windows.wholeMatch(of: /[s?]*T{5,}[s?]*s{10,}[s?]*T{10,}/) != nil,
                "not the tone, at least 1 s of silence, then the tone to the end: \(windows)")
        let last = Array(samples.suffix(48000))
        #expect(abs(AudioAnalysis.dominantFrequencyHz(last, sampleRateHz: 48000) - toneHz) < 5,
                "the last second at nginx is not the mic's \(toneHz) Hz")
    }
}
