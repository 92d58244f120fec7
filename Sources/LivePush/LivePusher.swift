import CaptureLink
import Foundation
import LinuxSystem
import Media
import RTMP
import Synchronization

/// Why the pusher could not start something.
public enum LivePushError: Error, CustomStringConvertible {
    case config(LivePushConfigError)
    case screenCapture(Rendezvous.Failure)
    case encoder(MediaError)
    case alreadyCapturing(group: String)

    public var description: String {
        switch self {
        case .config(let error): return "invalid configuration: \(error)"
        case .screenCapture(let failure): return "cannot listen for a capture helper: \(failure)"
        case .encoder(let error): return "cannot start the video encoder: \(error)"
        case .alreadyCapturing(let group): return "screen capture is already running on group '\(group)'"
        }
    }
}

/// The LivePush SDK's pusher: takes the screen from a capture helper (Capture Link), encodes
/// it, records it, and reports to its observer on one serial queue, in order.
///
/// Thread-safe: every method may be called from any thread.
public final class LivePusher: @unchecked Sendable {
    public let config: LivePushConfig
    private weak var observer: (any LivePusherObserver)?
    private let callbackQueue: DispatchQueue
    /// Set on `callbackQueue` (see `destroy`).
    private let callbackQueueKey = DispatchSpecificKey<Void>()

    /// What the pusher runs now and the switches that steer it. Touched only by `LivePusher` and
    /// its extension files.
    struct State {
        var endpoint: PusherEndpoint?
        var pipeline: VideoPipeline?
        var audioPipeline: AudioPipeline?
        var microphone: Microphone?
        var recording: LocalRecording?
        /// The replay buffer asked for (`enableReplayBuffer`), and the one attached while capture runs.
        var replaySettings: ReplaySettings?
        var replay: ReplayBuffer?
        /// Why the screen is not shown: the user paused, the helper paused.
        var userPaused = false
        var helperPaused = false
        /// A helper (re)started: the screen comes back with its first frame.
        var helperReturning = false
        /// The audio controls the user set, kept for a pipeline that does not exist yet.
        var audioControls = PendingAudioControls()
    }

    /// The pusher's own state, held for a few instructions by any thread (the caller's, the link
    /// thread's, an output's, the statistics tick's). Under it the code takes only the pipelines'
    /// short locks (a placeholder, a sink added or removed, an audio control); it never builds,
    /// opens, joins, reads a file or waits under it, and never calls the observer.
    let state = Mutex(State())
    /// The calls that build or tear down (capture, microphone, recording, outputs) run one at a
    /// time, in the order they came, on this serial queue (`inTurn`), each with its blocking work
    /// (an encoder's open, a socket's bind, a PipeWire round trip, a file, a thread's join) done
    /// while `state` is free. Only those public calls go through it, before any lock; never a
    /// callback, a pipeline, an output, the link thread or the tick, which those calls may join.
    private let lifecycle = DispatchQueue(label: "livepush.lifecycle")
    /// The live outputs, those that gave up, and their figures (their own lock).
    let outputs = PushOutputs()
    /// The 1 Hz statistics and the congestion policy: auto bitrate, the poor-network picture,
    /// adaptive resolution (their own lock).
    let tick: StatisticsTick
    /// `snapshotJPEG`'s picture and encoder, made on first use.
    let snapshotter = Mutex<Snapshotter?>(nil)
    /// Background music, external PCM, noise suppression, voice activity, ear monitoring
    /// (`LivePusher+Sound.swift`).
    let sound = SoundControls()
    /// Watermarks, the mirror and the video hook (`LivePusher+Picture.swift`).
    let picture = PictureControls()
    /// The last state sent to `onStateChanged` (`refreshState`, its own lock, held to queue the call).
    let reportedState = Mutex(LivePusherState.idle)
    /// The observer, for the callbacks that run synchronously on a pipeline's thread.
    var currentObserver: (any LivePusherObserver)? { observer }
    /// The video pipeline while capture runs.
    var pipeline: VideoPipeline? { state.withLock { $0.pipeline } }

    /// A pusher with a validated `config`. Callbacks go to `observer` on `callbackQueue`
    /// (a private serial queue when nil).
    public init(config: LivePushConfig, observer: (any LivePusherObserver)? = nil, callbackQueue: DispatchQueue? = nil)
        throws(LivePushError)
    {
        do { self.config = try config.validated() } catch { throw .config(error) }
        tick = StatisticsTick(config: self.config, outputs: outputs)
        self.observer = observer
        self.callbackQueue = callbackQueue ?? DispatchQueue(label: "livepush.observer")
        // Marks the queue as this pusher's, so that `destroy` knows when it runs on it (a sync
        // there would wait for itself). A key per pusher: several may share one queue.
        self.callbackQueue.setSpecific(key: callbackQueueKey, value: ())
        sound.setNotifier { [weak self] call in self?.notify(call) }
    }

    deinit {
        destroy()
        callbackQueue.setSpecific(key: callbackQueueKey, value: nil)  // the key's address may be reused
    }

    // MARK: Screen capture

    /// Listens for a capture helper on `group` and starts the video pipeline (black until a
    /// helper sends frames) and, unless `audio` is false, the audio pipeline (silence until a
    /// source sends samples: `startMicrophone`, or a helper's desktop audio). Video and audio
    /// share one timeline from this moment. `runtimeDirectory` overrides XDG_RUNTIME_DIR.
    public func startScreenCapture(group: String, runtimeDirectory: String? = nil, audio: Bool = true)
        throws(LivePushError)
    {
        try startCapture(group: group, runtimeDirectory: runtimeDirectory, audio: audio)
    }

    /// Starts the pipelines; with a `group`, listens for a capture helper there too (without
    /// one the pictures come from `sendVideoFrame`, LivePusher+Picture.swift).
    func startCapture(group: String?, runtimeDirectory: String?, audio: Bool) throws(LivePushError) {
        try inTurn { () throws(LivePushError) in
            try startCaptureLocked(group: group, runtimeDirectory: runtimeDirectory, audio: audio)
        }
    }

    /// Builds the pipelines and the endpoint with `state` free, and puts them in `state` before the
    /// endpoint exists, so that the helper's first events find them. Called in turn (`inTurn`).
    private func startCaptureLocked(group: String?, runtimeDirectory: String?, audio: Bool) throws(LivePushError) {
        let running = state.withLock { ($0.endpoint?.configuration.group, $0.pipeline != nil) }
        if let group = running.0 { throw .alreadyCapturing(group: group) }
        if running.1 { throw .alreadyCapturing(group: "(external video)") }
        let epochNs = MonotonicClock.nowNs()
        let settings = VideoPipelineSettings(
            width: config.videoWidth, height: config.videoHeight, fps: config.fps, gopSeconds: config.gopSeconds,
            bitrateKbps: tick.bitratesKbps.current, encoder: config.encoder, scaleMode: config.scaleMode,
            tuning: config.encoderTuning, epochNs: epochNs)
        let box = EndpointBox()
        let images = loadPlaceholderImages()
        let pipeline: VideoPipeline
        do {
            pipeline = try VideoPipeline(settings: settings, images: images) { box.endpoint?.acquireLatestFrame() }
        } catch {
            // A hardware encoder is probed by opening it: without its GPU, fall back to libx264.
            guard settings.encoder != .libx264 else { throw reported(.encoder(error)) }
            var fallback = settings
            fallback.encoder = .libx264
            do {
                pipeline = try VideoPipeline(settings: fallback, images: images) { box.endpoint?.acquireLatestFrame() }
            } catch {
                throw reported(.encoder(error))
            }
            let requested = settings.encoder.rawValue
            notify { $0.onWarning(code: LivePushWarningCode.encoderFallback,
                                  message: "encoder \(requested) is not usable here (\(error)); using libx264",
                                  extraInfo: ["encoder": requested]) }
        }
        var audioPipeline: AudioPipeline?
        if audio {
            do {
                var settings = AudioPipelineSettings(sampleRateHz: config.audioSampleRateHz, channels: config.audioChannels,
                                                     bitrateKbps: config.audioBitrateKbps, epochNs: epochNs)
                settings.sourceTracks = config.recordTracks
                audioPipeline = try AudioPipeline(settings: settings)
            } catch {
                throw reported(.encoder(error))
            }
        }
        pipeline.onFirstFrame = { [weak self] in self?.notify { $0.onCaptureFirstVideoFrame() } }
        pipeline.onStall = { [weak self] durationMs, skipped in self?.warnStalled(durationMs: durationMs, skipped: skipped) }
        watchAutoResolution(pipeline)
        pipeline.onEncoderError = { [weak self] error in
            self?.notify { $0.onError(code: LivePushErrorCode.encoderFailed, message: error.description, extraInfo: [:]) }
        }
        state.withLock {
            if let audioPipeline { $0.audioControls.apply(to: audioPipeline) }  // what was set before capture started
            if $0.userPaused { pipeline.showPlaceholder(.paused) }
            $0.pipeline = pipeline
            $0.audioPipeline = audioPipeline
        }
        tick.applyBitrate(to: pipeline)
        if let group {
            var endpointConfiguration = PusherEndpointConfiguration(group: group)
            endpointConfiguration.runtimeDirectory = runtimeDirectory
            endpointConfiguration.fps = UInt32(config.fps)
            do {
                let endpoint = try PusherEndpoint(configuration: endpointConfiguration) { [weak self] event in
                    self?.handle(event)
                }
                box.endpoint = endpoint
                state.withLock { $0.endpoint = endpoint }
            } catch {
                state.withLock {
                    $0.pipeline = nil
                    $0.audioPipeline = nil
                }
                throw reported(.screenCapture(error))
            }
        }
        if let audioPipeline { connectAudio(audioPipeline) }
        picture.configure(watermarks: config.watermarks, mirrored: config.pushMirror) { path, problem in
            notify { $0.onWarning(code: LivePushWarningCode.watermarkUnreadable,
                                  message: "cannot use '\(path)' as a watermark (\(problem)); use a PNG or JPEG file. "
                                    + "The broadcast goes on without it", extraInfo: ["path": path]) }
        }
        picture.attach(pipeline.compositor)
        attachReplay(pipeline: pipeline, audioPipeline: audioPipeline)
        pipeline.start()
        audioPipeline?.start()
        tick.start(parts: { [weak self] in self?.tickParts }, notify: { [weak self] call in self?.notify(call) })
        refreshState()
    }

    /// Runs `body` as the only build-or-tear-down call, after those that came before it (a queue,
    /// not a lock: under many callers a lock let one of them wait 8 s while others went ahead).
    /// `body` runs on the calling thread.
    func inTurn<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        dispatchPrecondition(condition: .notOnQueue(lifecycle))  // a call from inside one would wait for itself
        let result = lifecycle.sync { () -> Result<T, E> in
            do throws(E) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// What the statistics tick reads and steers, while capture runs.
    private var tickParts: StatisticsTick.Parts? {
        state.withLock {
            guard let pipeline = $0.pipeline else { return nil }
            return StatisticsTick.Parts(pipeline: pipeline, audioPipeline: $0.audioPipeline, endpoint: $0.endpoint,
                                        recording: $0.recording, replay: $0.replay)
        }
    }

    /// A failure to start screen capture, also sent to `onError` (the encoder's as
    /// `encoderFailed`, the rendezvous's as `screenCaptureFailed`), so that an observer sees
    /// every failure where it sees the others.
    private func reported(_ error: LivePushError) -> LivePushError {
        let code = if case .screenCapture = error { LivePushErrorCode.screenCaptureFailed } else { LivePushErrorCode.encoderFailed }
        notify { $0.onError(code: code, message: error.description, extraInfo: [:]) }
        return error
    }

    /// The configured pause and poor-network images; one that cannot be read is a warning
    /// (the dimmed last picture is shown instead), never a reason not to broadcast.
    private func loadPlaceholderImages() -> PlaceholderImages {
        func load(_ path: String?, _ role: String) -> StillImage? {
            guard let path else { return nil }
            do {
                return try StillImage.load(path: path)
            } catch {
                notify { $0.onWarning(code: LivePushWarningCode.imageUnreadable,
                                      message: "cannot use '\(path)' as the \(role) image (\(error)); use a PNG or JPEG file. "
                                        + "The last picture, dimmed, is shown instead", extraInfo: ["path": path]) }
                return nil
            }
        }
        return PlaceholderImages(pause: load(config.pauseImagePath, "pause"),
                                 networkPoor: load(config.networkPoorImagePath, "poor-network"))
    }

    // MARK: Pause

    /// Sends the pause image (or the last picture, dimmed, with a notice) instead of the screen,
    /// at the same frame rate; audio goes on. The reference SDK's pause; `onPushPaused` follows
    /// (once: pausing again changes nothing).
    public func pause() {
        let changed = state.withLock { state in
            defer { state.userPaused = true }
            state.pipeline?.showPlaceholder(.paused)
            return !state.userPaused
        }
        if changed { notify { $0.onPushPaused() } }
    }

    /// The screen again, from the next frame (a keyframe); `onPushResumed` follows, once.
    public func resume() {
        let changed = state.withLock { state in
            defer { state.userPaused = false }
            if !state.helperPaused { state.pipeline?.hidePlaceholder(.paused) }
            return state.userPaused
        }
        if changed { notify { $0.onPushResumed() } }
    }

    /// Whether a placeholder is shown instead of the screen now, and why: "paused",
    /// "helperLost" or "networkPoor"; nil while the screen is shown.
    public var placeholderShown: String? {
        pipeline?.shownPlaceholder.map { "\($0)" }
    }

    private func connectAudio(_ audioPipeline: AudioPipeline) {
        sound.attach(audioPipeline)
        audioPipeline.onFirstSamples = { [weak self] _ in self?.notify { $0.onCaptureFirstAudioFrame() } }
        audioPipeline.onMicrophoneLevel = { [weak self] level, muted in
            self?.notify { $0.onMicrophoneVolumeUpdate(volume: level, muted: muted) }
        }
        audioPipeline.onEncoderError = { [weak self] error in
            self?.notify { $0.onError(code: LivePushErrorCode.encoderFailed, message: "audio: \(error)", extraInfo: [:]) }
        }
        let rate = audioPipeline.settings.sampleRateHz, channels = audioPipeline.settings.channels
        audioPipeline.onProcessFrame = { [weak self] samples, ptsMs in
            // Called on the audio thread, synchronously: the observer changes the frame in place.
            guard let observer = self?.observer else { return }
            var frame = AudioFrame(samples: samples, sampleRateHz: rate, channels: channels, ptsMs: ptsMs)
            observer.onProcessAudioFrame(&frame)
            if frame.samples.count == samples.count { samples = frame.samples }
        }
    }

    /// The socket a helper connects to, while screen capture runs.
    public var screenCaptureSocketPath: String? {
        state.withLock { $0.endpoint }?.rendezvous.socketPath
    }

    /// Stops the helper (STOP), the pipeline, the push and any recording.
    public func stopScreenCapture() {
        inTurn {
            stopPushLocked()
            stopLocalRecordingLocked()
            if let replay = state.withLock({ $0.replay }) { detachReplay(replay) }
            stopMicrophoneLocked()
            sound.detach()
            let previewOpen = previewWindowID != nil
            picture.detach()
            if previewOpen { notify { $0.onPreviewStopped() } }
            let (endpoint, pipeline, audioPipeline) = state.withLock { state in
                defer {
                    state.endpoint = nil
                    state.pipeline = nil
                    state.audioPipeline = nil
                    state.replay = nil
                }
                return (state.endpoint, state.pipeline, state.audioPipeline)
            }
            tick.stop()
            endpoint?.stop()
            pipeline?.stop()
            audioPipeline?.stop()
            refreshState()
        }
    }

    // MARK: Audio

    /// The microphone's volume in percent: 100 as captured, 0 silent, up to 400 amplified.
    /// Like every audio control, it may be called before `startScreenCapture`: the pipeline
    /// starts with it.
    public func setCaptureVolume(_ percent: Int) { changeAudio { $0.volumesPercent[.microphone] = percent } }

    /// The helper's desktop audio volume in percent, as `setCaptureVolume`.
    public func setDesktopAudioVolume(_ percent: Int) { changeAudio { $0.volumesPercent[.desktop] = percent } }

    /// Sends silence instead of the audio (or the audio again); the audio track and its
    /// timestamps go on, so players do not notice a gap.
    public func setMute(_ muted: Bool) { changeAudio { $0.muted = muted } }

    /// Reports the microphone's level to `onMicrophoneVolumeUpdate` every `intervalMs`
    /// (100 or more; 0 stops).
    public func enableVolumeEvaluation(intervalMs: Int) {
        changeAudio { $0.levelIntervalMs = intervalMs <= 0 ? 0 : max(100, intervalMs) }
    }

    /// Keeps an audio control and applies it to the pipeline, now or when it starts.
    func changeAudio(_ change: (inout PendingAudioControls) -> Void) {
        state.withLock {
            change(&$0.audioControls)
            if let audioPipeline = $0.audioPipeline { $0.audioControls.apply(to: audioPipeline) }
        }
    }

    /// Captures the microphone through PipeWire: the source named `name` (a node name, as
    /// `livepush devices` lists them) or the default one. Returns 0, or -1 when screen capture
    /// (which owns the audio pipeline) is not started, audio is off, or no microphone can be
    /// opened; then `onWarning(microphoneUnavailable)` says what is missing and how to fix it,
    /// and the stream carries silence.
    @discardableResult
    public func startMicrophone(name: String? = nil) -> Int32 {
        let result = inTurn { () -> Result<Microphone, MicrophoneProblem>? in
            guard let audioPipeline = state.withLock({ $0.microphone == nil ? $0.audioPipeline : nil }) else { return nil }
            // A PipeWire round trip: with `state` free.
            let result = Microphone.open(name: name, pipeline: audioPipeline) { [weak self] event in
                self?.handle(event)
            }
            if case .success(let microphone) = result { state.withLock { $0.microphone = microphone } }
            return result
        }
        switch result {
        case nil:
            return -1
        case .success:
            return 0
        case .failure(let problem):
            notify { $0.onWarning(code: LivePushWarningCode.microphoneUnavailable,
                                  message: "no microphone: \(problem.description); the stream carries silence instead",
                                  extraInfo: name.map { ["mic": $0] } ?? [:]) }
            return -1
        }
    }

    private func handle(_ event: MicrophoneEvent) {
        switch event {
        case .lost(let source):
            notify { $0.onWarning(code: LivePushWarningCode.microphoneLost,
                                  message: "the microphone '\(source)' went away; silence until it returns",
                                  extraInfo: ["mic": source]) }
        case .returned(let source):
            notify { $0.onWarning(code: LivePushWarningCode.microphoneReturned,
                                  message: "the microphone '\(source)' is back", extraInfo: ["mic": source]) }
        }
    }

    /// Stops capturing the microphone (its place in the mix becomes silence).
    public func stopMicrophone() {
        inTurn { stopMicrophoneLocked() }
    }

    /// `stopMicrophone`, in turn (`inTurn`).
    private func stopMicrophoneLocked() {
        let microphone = state.withLock { state in
            defer { state.microphone = nil }
            return state.microphone
        }
        microphone?.stop()
    }

    /// Stops everything; the pusher cannot be used afterwards. Called from any other thread, it
    /// returns once every callback already queued has run. Called on the callback queue itself
    /// (from an observer callback, or when the last reference to the pusher goes away in one), it
    /// cannot wait for them, since they run after the callback it is called from: it returns once
    /// everything is stopped. Callbacks of a pusher that no longer exists are skipped.
    public func destroy() {
        stopScreenCapture()
        if DispatchQueue.getSpecific(key: callbackQueueKey) == nil {
            callbackQueue.sync {}  // every callback already queued has run
        }
    }

    // MARK: Statistics

    /// The latest figures (also sent to `onStatisticsUpdate` once a second).
    public var statistics: LivePusherStatistics { tick.latest }

    func notify(_ call: @escaping @Sendable (any LivePusherObserver) -> Void) {
        callbackQueue.async { [weak self] in
            guard let observer = self?.observer else { return }
            call(observer)
        }
    }
}

/// Lets the pipeline reach the endpoint created after it.
private final class EndpointBox: @unchecked Sendable {
    var endpoint: PusherEndpoint?
}
