import CaptureLink
import Foundation
import LinuxSystem
import LivePush
import Testing
import TestSupport

/// Noise suppression and voice activity on a real PipeWire microphone (issue 17): a private
/// virtual mic (pw-loopback) into which pw-play plays a signal made by ffmpeg.
@Suite(.enabled(if: TestEnvironment.isEnabled(.pipewire) && TestEnvironment.isEnabled(.rtmp),
                "needs the test PipeWire daemon and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct MicrophoneProcessingTests {
    final class Recorder: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        /// Each mixed frame: its time on the stream and its level.
        var frames: [(ptsMs: Int64, dbfs: Double)] = []
        /// Each voice activity report with the last frame time mixed when it arrived.
        var voice: [(active: Bool, lastPtsMs: Int64)] = []
        var warnings: [String] = []
        func onProcessAudioFrame(_ frame: inout AudioFrame) {
            let level = AudioAnalysis.rmsDbfs(frame.samples)
            lock.withLock { frames.append((frame.ptsMs, level)) }
        }
        func onVoiceActivityDetected(_ active: Bool) {
            lock.withLock { voice.append((active, frames.last?.ptsMs ?? -1)) }
        }
        func onWarning(code: Int32, message: String, extraInfo: [String: String]) { lock.withLock { warnings.append(message) } }
    }

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 15
        return config
    }

    /// Pushes `seconds` with `mic` as the microphone; `at(t)` runs after each whole second t.
    private func push(mic: SignalMic, seconds: Int, observer: Recorder, at: (LivePusher, Int) -> Void) throws -> String {
        let key = UniqueName.make("micproc")
        let pusher = try LivePusher(config: config(), observer: observer)
        try pusher.startScreenCapture(group: UniqueName.make("micproc"), runtimeDirectory: privateRuntimeDirectory())
        #expect(pusher.startMicrophone(name: mic.name) == 0)
        #expect(pusher.startPush(url: try TestEnvironment.recordURL(key: key)) == 0)
        try mic.play()
        at(pusher, 0)
        let startNs = MonotonicClock.nowNs()
        for second in 1...seconds {
            MonotonicClock.sleep(untilNs: startNs + UInt64(second) * 1_000_000_000)
            at(pusher, second)
        }
        pusher.destroy()
        return key
    }

    /// Tone bursts (1 kHz, 0.8 s on, 0.8 s off): voice activity follows each start and stop
    /// within 300 ms (from the sound's capture time to the report).
    @Test func toneBurstsToggleVoiceActivityWithin300Milliseconds() throws {
        let mic = try SignalMic(expression: "0.25*sin(2*PI*1000*t)*lt(mod(t\\,1.6)\\,0.8)", seconds: 12)
        let observer = Recorder()
        _ = try push(mic: mic, seconds: 8, observer: observer) { pusher, second in
            if second == 0 { pusher.enableVoiceActivityDetection(true) }
        }
        let (frames, voice) = observer.lock.withLock { (observer.frames, observer.voice) }
        // Where the sound starts and stops in the mix, frame by frame.
        var changes: [(active: Bool, ptsMs: Int64)] = []
        var loud = false
        for frame in frames where (frame.dbfs > -30) != loud {
            loud.toggle()
            changes.append((loud, frame.ptsMs))
        }
        #expect(changes.count >= 6, "sound changes \(changes)")
        #expect(voice.count >= 6 && voice.count <= changes.count, "voice \(voice), sound \(changes)")
        // The mixer runs 20 ms (a frame) + 50 ms (its wait for late samples) behind capture. A
        // report is queued while its frame is mixed, and may run before that frame reaches
        // onProcessAudioFrame: it is counted as late as one frame after the last one seen.
        var latenciesMs: [Int64] = []
        defer { print("voice activity latency ms (true/false alternating): \(latenciesMs)") }
        for report in voice {
            let reportedPtsMs = report.lastPtsMs + 20
            let change = try #require(changes.last { $0.active == report.active && $0.ptsMs <= reportedPtsMs },
                                      "no sound change before \(report)")
            let latencyMs = reportedPtsMs + 70 - change.ptsMs
            latenciesMs.append(latencyMs)
            #expect(latencyMs <= 300, "voice \(report.active) reported \(latencyMs) ms after the sound changed")
        }
        #expect(zip(voice, voice.dropFirst()).allSatisfy { $0.active != $1.active }, "\(voice)")
    }

    /// White noise at about −40 dBFS and 1 kHz tone bursts at −15 dBFS: with suppression on
    /// (high), the noise between the bursts falls by 10 dB or more at nginx and the tone stays
    /// within 3 dB.
    @Test func suppressionLowersTheNoiseByTenDecibelsAndKeepsTheTone() throws {
        let mic = try SignalMic(expression: "0.25*sin(2*PI*1000*t)*lt(mod(t\\,1)\\,0.5)+0.017*(2*random(0)-1)", seconds: 14)
        let observer = Recorder()
        let key = try push(mic: mic, seconds: 10, observer: observer) { pusher, second in
            if second == 4 { pusher.setAudioDenoise(.high) }
        }
        let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 9.5)
        #expect(received.count >= 48000 * 9, "\(received.count) samples reached nginx")
        // 20 ms windows: in a burst (well above the noise) or between; the windows next to a
        // change are left out (the burst's edges click).
        func levels(_ from: Double, _ to: Double) -> (tone: Double, noise: Double) {
            let window = 960
            let dbfs = stride(from: Int(from * 48000), to: min(received.count, Int(to * 48000)) - window, by: window)
                .map { AudioAnalysis.rmsDbfs(Array(received[$0..<($0 + window)])) }
            var tone: [Double] = [], noise: [Double] = []
            for index in 2..<max(2, dbfs.count - 2) {
                let around = dbfs[(index - 2)...(index + 2)]
                if around.allSatisfy({ $0 > -25 }) { tone.append(dbfs[index]) }
                if around.allSatisfy({ $0 < -25 }) { noise.append(dbfs[index]) }
            }
            func mean(_ values: [Double]) -> Double {
                10 * log10(values.map { pow(10, $0 / 10) }.reduce(0, +) / Double(max(1, values.count)))
            }
            return (mean(tone), mean(noise))
        }
        let off = levels(1.5, 3.8), on = levels(6.0, 9.0)
        print("denoise at nginx: off \(off), on (high) \(on)")
        #expect(off.noise > -46 && off.noise < -34 && off.tone > -20, "without suppression: \(off)")
        #expect(off.noise - on.noise >= 10, "noise without \(off.noise) dBFS, with suppression \(on.noise) dBFS")
        #expect(abs(off.tone - on.tone) <= 3, "tone without \(off.tone) dBFS, with suppression \(on.tone) dBFS")
    }

    /// Ear monitoring: the mic's tone and the background music's reach the chosen sink (a second
    /// virtual device, whose other side pw-record records), with the latency from capture to the
    /// sink measured.
    @Test func earMonitoringPlaysTheMicToTheSinkAndMeasuresItsLatency() throws {
        let mic = try SignalMic(expression: "0.25*sin(2*PI*1000*t)", seconds: 12)
        let music = try SoundSignals.toneFile(ext: "mp3", codec: "libmp3lame", frequencyHz: 600, amplitude: 0.25,
                                              seconds: 2)
        defer { try? FileManager.default.removeItem(atPath: music) }
        let ear = try SignalMic(expression: "0", seconds: 1)  // its "-in" side is the sink we play to
        let recorded = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("ear")).path + ".wav"
        defer { try? FileManager.default.removeItem(atPath: recorded) }
        let observer = Recorder()
        var recorder: RunningCommand?
        var latencies: [Int] = []
        var code: Int32 = 99
        _ = try push(mic: mic, seconds: 5, observer: observer) { pusher, second in
            if second == 0 {
                code = pusher.setEarsBack(true, sink: ear.name + "-in")
                #expect(pusher.startBGM(path: music, loop: true) == 0)
                recorder = try? ProcessRunner.start("pw-record", ["--latency", "256", "--target", ear.name, recorded])
            }
            if second >= 2, let latency = pusher.earMonitorLatencyMs { latencies.append(latency) }
        }
        let running = try #require(recorder, "pw-record did not start")
        running.interrupt()
        _ = running.finish()
        print("ear monitor latency ms (capture to sink, each second): \(latencies)")
        #expect(code == 0, "setEarsBack: \(code), \(observer.lock.withLock { observer.warnings })")
        let samples = try AudioAnalysis.decodeMono(recorded)
        #expect(samples.count > 48000 * 2, "\(samples.count) samples reached the ear-monitor sink")
        let tail = Array(samples.dropFirst(48000))
        // Which of the two tones leads, read over one second: the music loops every 2 s (an MP3, whose
        // seam is not phase-continuous) and a hole under load breaks the phase too, either of which
        // moves the peak a few hertz (604 Hz once in CI); the levels below say that both arrive.
        let dominant = AudioAnalysis.dominantFrequencyHz(tail, sampleRateHz: 48000)
        #expect(abs(dominant - 1000) < 6 || abs(dominant - 600) < 6, "\(dominant) Hz")
        // The tone plays at −15 dBFS. Under load the mixer leaves holes (a chunk later than its mix
        // delay is mixed as silence; docs/testing.md) that pull the level of the whole tail down (to
        // −26.7 dBFS once in a full run): the median of the 100 ms levels is the level where it plays.
        let micLevels = AudioAnalysis.toneLevelsDbfs(tail, frequencyHz: 1000, sampleRateHz: 48000)
        let musicLevels = AudioAnalysis.toneLevelsDbfs(tail, frequencyHz: 600, sampleRateHz: 48000)
        #expect(try #require(micLevels.median) > -26,
                "the mic at the sink, 100 ms levels: \(micLevels.windows.map { Int($0) })")
        #expect(try #require(musicLevels.median) > -26,
                "the music at the sink, 100 ms levels: \(musicLevels.windows.map { Int($0) })")
        // Measured, and sane: 27 ms here on a quiet machine (the goal is 50 ms); with the cores
        // shared by other builds the test graph itself has delivered the mic 300 ms late.
        #expect(latencies.count >= 2 && latencies.allSatisfy { $0 > 0 && $0 < 1000 }, "\(latencies)")
    }

    @Test func earMonitoringToAMissingSinkIsAnErrorAndTheStreamGoesOn() throws {
        let mic = try SignalMic(expression: "0.25*sin(2*PI*1000*t)", seconds: 6)
        let observer = Recorder()
        var code: Int32 = 0
        let key = try push(mic: mic, seconds: 3, observer: observer) { pusher, second in
            if second == 0 { code = pusher.setEarsBack(true, sink: "no-such-sink") }
        }
        #expect(code == LivePushErrorCode.earMonitorUnavailable)
        let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 2.5)
        #expect(abs(AudioAnalysis.dominantFrequencyHz(Array(received.dropFirst(48000)), sampleRateHz: 48000) - 1000) < 2)
    }

    /// Automatic gain (speexdsp's AGC, with suppression off): a quiet voice, 1 kHz bursts at
    /// −43 dBFS, is brought up by 6 dB or more at nginx within a few seconds.
    @Test func automaticGainRaisesAQuietVoice() throws {
        let mic = try SignalMic(expression: "0.01*sin(2*PI*1000*t)*lt(mod(t\\,1)\\,0.5)", seconds: 14)
        let observer = Recorder()
        let key = try push(mic: mic, seconds: 10, observer: observer) { pusher, second in
            if second == 3 { pusher.setAudioDenoise(.off, automaticGain: true) }
        }
        let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 9.5)
        try #require(received.count >= 48000 * 9, "\(received.count) samples reached nginx")
        let before = AudioAnalysis.toneLevelDbfs(Array(received[(48000 * 2)..<(48000 * 3)]), frequencyHz: 1000,
                                                 sampleRateHz: 48000)
        let after = AudioAnalysis.toneLevelDbfs(Array(received[(48000 * 8)..<(48000 * 9)]), frequencyHz: 1000,
                                                sampleRateHz: 48000)
        print("automatic gain at nginx: 1 kHz bursts \(before) dBFS before, \(after) dBFS after")
        // 0.01 peak in bursts half the time: about −49 dBFS over a second.
        #expect(before > -56 && before < -42, "before \(before) dBFS")
        #expect(after - before >= 6, "before \(before) dBFS, with automatic gain \(after) dBFS")
    }
}
