import AudioProcessing
import CaptureLink
import Foundation
import LinuxSystem

/// PCM an application sends itself (`LivePusher.sendPCM`): interleaved samples.
public enum PCMSamples: Sendable {
    /// Signed 16-bit.
    case s16([Int16])
    /// 32-bit float, −1...1.
    case f32([Float])
}

/// Noise suppression levels (`LivePusher.setAudioDenoise`), re-exported from AudioProcessing.
public typealias AudioDenoiseLevel = NoiseSuppressionLevel

/// Background music, external PCM, noise suppression, voice activity and ear monitoring: the
/// sound path beside the microphone (docs/guide.md, "Sound"). These methods take effect while
/// screen capture runs (it owns the audio pipeline); volumes, denoise, voice activity and ear
/// monitoring set before it start with it.
extension LivePusher {
    // MARK: Background music

    /// Plays the music file at `path` (MP3, M4A/AAC, FLAC, Ogg Vorbis or Opus, WAV), mixed into
    /// the stream as its own source, in a loop when `loop` (the end joins the start without a
    /// gap; nil: as `setBGMLoop` set it, not looped at first), replacing what played before. A
    /// given `loop` is kept for later tracks, as `setBGMLoop`. Returns 0 (then `onBGMStarted`, `onBGMProgress` once
    /// a second, `onBGMComplete` at the end), −1 when screen capture or audio is not started, or
    /// `LivePushErrorCode.bgmFileUnreadable` (also in `onBGMError` and `onError`, saying why);
    /// the broadcast goes on either way.
    @discardableResult
    public func startBGM(path: String, loop: Bool? = nil) -> Int32 { sound.startBGM(path: path, loop: loop) }

    /// Stops the background music (no `onBGMComplete`).
    public func stopBGM() { sound.withMusic { $0.stop() } }

    /// Pauses the background music where it is (silence in its place).
    public func pauseBGM() { sound.withMusic { $0.pause() } }

    /// Resumes paused background music from where it was.
    public func resumeBGM() { sound.withMusic { $0.resume() } }

    /// Whether the music loops at its end (the reference SDKs' setBGMLoop): the track playing
    /// now and every later one. Set before `startBGM` (or before screen capture starts), it
    /// applies to the first track.
    public func setBGMLoop(_ loop: Bool) { sound.setBGMLoop(loop) }

    /// Whether music loops (`setBGMLoop`, or the last `startBGM` that said).
    public var bgmLoop: Bool { sound.bgmLoopSetting }

    /// The background music's volume in percent: 100 as decoded, 0 silent, up to 400.
    public func setBGMVolume(_ percent: Int) { sound.setVolume(percent, for: .music) }

    /// Whether background music is playing now (started, not paused, not at its end).
    public var isBGMPlaying: Bool { sound.bgmPlaying }

    // MARK: External PCM

    /// Mixes sound the application makes itself into the stream, as its own source: `samples`
    /// interleaved at `sampleRateHz` (8000...192000) with `channels` (1...8), the first one
    /// meant for `timestampNs` (CLOCK_MONOTONIC, as `MonotonicClock.nowNs()`; nil: now).
    /// Send it as it is made (the queue holds at most 1 s); resampled with libswresample.
    /// Returns 0, −1 when screen capture or audio is not started, or −2 for a rate, channel
    /// count or sample count (not a multiple of `channels`) that cannot be used.
    @discardableResult
    public func sendPCM(_ samples: PCMSamples, sampleRateHz: Int, channels: Int, timestampNs: UInt64? = nil) -> Int32 {
        let floats: [Float]
        switch samples {
        case .s16(let values): floats = values.map { Float($0) / 32768 }
        case .f32(let values): floats = values
        }
        guard (8000...192_000).contains(sampleRateHz), (1...8).contains(channels), !floats.isEmpty,
              floats.count % channels == 0
        else { return LivePushErrorCode.invalidParameter }
        return sound.sendPCM(floats, rateHz: sampleRateHz, channels: channels, ptsNs: timestampNs ?? MonotonicClock.nowNs())
    }

    /// The volume of `sendPCM`'s sound in percent, as `setCaptureVolume`.
    public func setExternalAudioVolume(_ percent: Int) { sound.setVolume(percent, for: .external) }

    // MARK: Microphone processing

    /// Noise suppression on the microphone (off by default, as in the reference SDK), with
    /// speexdsp's preprocessor: steady noise (hiss, fans) goes down by up to 15, 25 or 40 dB
    /// (low, medium, high) while a voice stays. `automaticGain` also levels the voice.
    public func setAudioDenoise(_ level: AudioDenoiseLevel, automaticGain: Bool = false) {
        sound.setDenoise(level, automaticGain: automaticGain)
    }

    /// Reports `onVoiceActivityDetected(true/false)` when a voice starts or stops on the
    /// microphone (within 300 ms), or stops reporting.
    public func enableVoiceActivityDetection(_ enabled: Bool = true) { sound.setVoiceActivityDetection(enabled) }

    /// The microphone's processing as set: noise suppression level, automatic gain, voice activity.
    public var microphoneProcessing: (denoise: AudioDenoiseLevel, automaticGain: Bool, voiceActivity: Bool) {
        sound.microphoneSettings
    }

    // MARK: Ear monitoring

    /// Plays the microphone (and the background music) to a PipeWire sink, so that the
    /// streamer hears themselves: `sink` a node name (`livepush devices`) or nil for the
    /// default output. Returns 0, or `LivePushErrorCode.earMonitorUnavailable` (also in
    /// `onError`, saying why); the broadcast goes on either way.
    @discardableResult
    public func setEarsBack(_ enabled: Bool, sink: String? = nil) -> Int32 { sound.setEarMonitor(enabled, sink: sink) }

    /// While ear monitoring runs: how long the microphone's sound takes from its capture to
    /// the sink, in ms, as measured on the playback stream; nil otherwise.
    public var earMonitorLatencyMs: Int? { sound.earMonitor?.latencyMs }

    /// Ear monitoring as asked (`setEarsBack`): on or off and its sink (nil: the default output),
    /// and whether it plays now.
    public var earMonitor: (enabled: Bool, sink: String?, playing: Bool) {
        let setting = sound.earMonitorSetting
        return (setting.enabled, setting.sink, sound.earMonitor != nil)
    }
}
