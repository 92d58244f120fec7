import AudioProcessing
import Foundation
import Media

/// The sound features of `LivePusher` beside the microphone itself: background music,
/// external PCM, noise suppression, voice activity and ear monitoring. Settings made before the
/// audio pipeline exists are kept and take effect when it starts (`attach`).
final class SoundControls: @unchecked Sendable {
    typealias Notify = @Sendable (@escaping @Sendable (any LivePusherObserver) -> Void) -> Void
    private let lock = NSLock()
    private var notify: Notify = { _ in }
    private var pipeline: AudioPipeline?
    private var music: BackgroundMusic?
    private var volumes: [AudioSourceKind: Int] = [:]
    private var bgmLoop = false
    private let processing = MicrophoneProcessing()
    private(set) var earMonitor: EarMonitor?
    private var earMonitorRequest: (enabled: Bool, sink: String?) = (false, nil)

    func setNotifier(_ notify: @escaping Notify) { lock.withLock { self.notify = notify } }

    /// The audio pipeline started: music, volumes and the microphone's processing join it.
    func attach(_ pipeline: AudioPipeline) {
        let (notify, volumes) = lock.withLock { (self.notify, self.volumes) }
        processing.onVoiceActivity = { active in notify { $0.onVoiceActivityDetected(active) } }
        processing.prepare(frameSamples: pipeline.frameSamples, rateHz: pipeline.settings.sampleRateHz,
                           channels: pipeline.settings.channels)
        pipeline.onMicrophoneFrame = { [processing] samples, capturedFrames in
            processing.process(&samples, capturedFrames: capturedFrames)
        }
        for (kind, percent) in volumes { pipeline.setVolume(percent, for: kind) }
        let music = BackgroundMusic(rateHz: pipeline.settings.sampleRateHz, channels: pipeline.settings.channels) { event in
            switch event {
            case .started(let path, let durationMs): notify { $0.onBGMStarted(path: path, durationMs: durationMs) }
            case .progress(let positionMs, let durationMs):
                notify { $0.onBGMProgress(positionMs: positionMs, durationMs: durationMs) }
            case .complete(let path): notify { $0.onBGMComplete(path: path) }
            case .failed(let code, let message, let path):
                notify { $0.onBGMError(code: code, message: message, path: path) }
                notify { $0.onError(code: code, message: message, extraInfo: ["path": path]) }
            }
        }
        pipeline.setPullSource(music, for: .music)
        let request = lock.withLock { () -> (enabled: Bool, sink: String?) in
            self.pipeline = pipeline
            self.music = music
            return earMonitorRequest
        }
        if request.enabled { _ = setEarMonitor(true, sink: request.sink) }
    }

    /// The audio pipeline stopped: music stops, the ear monitor closes.
    func detach() {
        let (music, monitor) = lock.withLock { () -> (BackgroundMusic?, EarMonitor?) in
            defer {
                pipeline = nil
                self.music = nil
                earMonitor = nil
            }
            return (self.music, earMonitor)
        }
        music?.stop()
        monitor?.stop()
    }

    // MARK: Background music

    /// Plays `path`, looped as `loop` says; nil: as the loop setting is (`setBGMLoop`). A given
    /// `loop` becomes the setting, for the next track too.
    func startBGM(path: String, loop: Bool?) -> Int32 {
        guard let (music, loop) = lock.withLock({ () -> (BackgroundMusic, Bool)? in
            guard let music = self.music else { return nil }
            if let loop { bgmLoop = loop }
            return (music, bgmLoop)
        }) else { return -1 }
        return music.start(path: path, loop: loop)
    }

    /// Whether music loops: this track, if one plays, and every later one (kept before the
    /// audio pipeline exists and across tracks, as the reference SDKs' `setBGMLoop`).
    func setBGMLoop(_ loop: Bool) {
        let music = lock.withLock { () -> BackgroundMusic? in
            bgmLoop = loop
            return self.music
        }
        music?.setLoop(loop)
    }

    var bgmLoopSetting: Bool { lock.withLock { bgmLoop } }

    func withMusic(_ body: (BackgroundMusic) -> Void) {
        if let music = lock.withLock({ self.music }) { body(music) }
    }

    var bgmPlaying: Bool { lock.withLock { music }?.isPlaying ?? false }

    // MARK: Volumes and external PCM

    func setVolume(_ percent: Int, for kind: AudioSourceKind) {
        let clamped = max(0, min(400, percent))
        let pipeline = lock.withLock { () -> AudioPipeline? in
            volumes[kind] = clamped
            return self.pipeline
        }
        pipeline?.setVolume(clamped, for: kind)
    }

    func sendPCM(_ samples: [Float], rateHz: Int, channels: Int, ptsNs: UInt64) -> Int32 {
        guard let pipeline = lock.withLock({ self.pipeline }) else { return -1 }
        pipeline.push(samples, rateHz: rateHz, channels: channels, ptsNs: ptsNs, from: .external)
        return 0
    }

    // MARK: Microphone processing

    func setDenoise(_ level: NoiseSuppressionLevel, automaticGain: Bool) {
        processing.configure(denoise: level, automaticGain: automaticGain)
    }

    func setVoiceActivityDetection(_ enabled: Bool) { processing.setVoiceActivityDetection(enabled) }

    /// The microphone's processing as set: noise suppression, automatic gain, voice activity.
    var microphoneSettings: (denoise: NoiseSuppressionLevel, automaticGain: Bool, voiceActivity: Bool) {
        processing.settings
    }

    /// Ear monitoring as asked (`setEarMonitor`): on or off, and the sink (nil: the default one).
    var earMonitorSetting: (enabled: Bool, sink: String?) { lock.withLock { earMonitorRequest } }

    // MARK: Ear monitoring

    /// Starts or stops ear monitoring; 0, or `LivePushErrorCode.earMonitorUnavailable`.
    func setEarMonitor(_ enabled: Bool, sink: String?) -> Int32 {
        let (pipeline, old, notify) = lock.withLock { () -> (AudioPipeline?, EarMonitor?, Notify) in
            earMonitorRequest = (enabled, sink)
            defer { earMonitor = nil }
            return (self.pipeline, earMonitor, self.notify)
        }
        old?.stop()
        pipeline?.onMicrophoneSamples = nil
        pipeline?.onMusicFrame = nil
        guard enabled, let pipeline else { return 0 }
        switch EarMonitor.open(sink: sink, pipeline: pipeline) {
        case .success(let monitor):
            lock.withLock { earMonitor = monitor }
            return 0
        case .failure(let problem):
            let message = "ear monitoring is off: \(problem.description)"
            notify { $0.onError(code: LivePushErrorCode.earMonitorUnavailable, message: message,
                                extraInfo: sink.map { ["sink": $0] } ?? [:]) }
            return LivePushErrorCode.earMonitorUnavailable
        }
    }
}

/// Noise suppression and voice activity on the microphone's 20 ms frames, on the audio
/// pipeline's thread; settings change from any thread.
final class MicrophoneProcessing: @unchecked Sendable {
    private let lock = NSLock()
    private var level = NoiseSuppressionLevel.off
    private var automaticGain = false
    private var voiceActivity = false
    private var detector = VoiceActivityDetector()
    private var suppressor: NoiseSuppressor?
    private var format = (frameSamples: 0, rateHz: 0, channels: 0)
    var onVoiceActivity: (@Sendable (Bool) -> Void)?

    func prepare(frameSamples: Int, rateHz: Int, channels: Int) {
        lock.withLock {
            format = (frameSamples, rateHz, channels)
            suppressor = nil
        }
    }

    func configure(denoise level: NoiseSuppressionLevel, automaticGain: Bool) {
        lock.withLock {
            self.level = level
            self.automaticGain = automaticGain
            suppressor?.configure(level: level, automaticGain: automaticGain)
        }
    }

    var settings: (denoise: NoiseSuppressionLevel, automaticGain: Bool, voiceActivity: Bool) {
        lock.withLock { (level, automaticGain, voiceActivity) }
    }

    func setVoiceActivityDetection(_ enabled: Bool) {
        lock.withLock {
            voiceActivity = enabled
            detector = VoiceActivityDetector()
        }
    }

    /// One 20 ms frame of the microphone, of which `capturedFrames` sample frames were captured and
    /// the rest is silence filled in for a hole. Only whole captured frames reach speexdsp: a frame
    /// with a hole gets the last frame's gain instead (see `NoiseSuppressor.applyLastGain`).
    func process(_ samples: inout [Float], capturedFrames: Int) {
        let change = lock.withLock { () -> Bool? in
            if level != .off || automaticGain {
                if suppressor == nil && format.frameSamples > 0 {
                    suppressor = NoiseSuppressor(frameSamples: format.frameSamples, sampleRateHz: format.rateHz,
                                                 channels: format.channels, level: level, automaticGain: automaticGain)
                }
                if capturedFrames >= format.frameSamples {
                    suppressor?.process(&samples)
                } else {
                    suppressor?.applyLastGain(&samples)
                }
            }
            guard voiceActivity, format.channels > 0 else { return nil }
            let meanSquare = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))
            return detector.feed(meanSquare: meanSquare)
        }
        if let change { onVoiceActivity?(change) }
    }
}
