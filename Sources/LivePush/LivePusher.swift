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
    let lock = NSLock()
    private(set) var endpoint: PusherEndpoint?
    var pipeline: VideoPipeline?
    var audioPipeline: AudioPipeline?
    private var microphone: Microphone?
    var recording: LocalRecording?
    /// The live push destinations, those that gave up (for reconnectPush and restartPush), and
    /// what the stopped ones carried.
    var pushes: [PushOutput] = []
    var givenUpPushes: [PushDestination] = []
    var finishedPushTotals: [(url: PushDestination, totals: PushOutputTotals)] = []
    private var statisticsTimer: DispatchSourceTimer?
    private var lastCounters = (encoded: 0, repeated: 0, skipped: 0, ticksSkipped: 0, bytes: 0)
    private var lastAudioBytes = 0
    private var lastCpuSeconds = 0.0
    private var lastSystemTicks: (busy: UInt64, total: UInt64)?
    var bitrateController: BitrateController
    /// Adaptive resolution's decisions (`LivePusher+Resolution.swift`); nil when it is off.
    var resolutionController: ResolutionController?
    /// Why the screen is not shown: the user paused, the helper paused, the helper is gone.
    var userPaused = false
    var helperPaused = false
    /// A helper (re)started: the screen comes back with its first frame.
    var helperReturning = false
    /// The audio controls the user set, kept for a pipeline that does not exist yet.
    private var audioControls = PendingAudioControls()
    /// Each destination's latest status and figures (`status`, LivePusherStatus.swift).
    var destinationStatus: [ObjectIdentifier: PushStatus] = [:]
    var destinationFigures: [ObjectIdentifier: PushOutputFigures] = [:]
    /// `snapshotJPEG`'s picture and encoder, made on first use.
    let snapshotter = Mutex<Snapshotter?>(nil)
    /// Since when the network has carried less than the minimum bitrate (ns), if it has.
    private var networkPoorSinceNs: UInt64?
    /// Background music, external PCM, noise suppression, voice activity, ear monitoring
    /// (`LivePusher+Sound.swift`).
    let sound = SoundControls()
    /// Watermarks, the mirror and the video hook (`LivePusher+Picture.swift`).
    let picture = PictureControls()
    /// The observer, for the callbacks that run synchronously on a pipeline's thread.
    var currentObserver: (any LivePusherObserver)? { observer }

    /// A pusher with a validated `config`. Callbacks go to `observer` on `callbackQueue`
    /// (a private serial queue when nil).
    public init(config: LivePushConfig, observer: (any LivePusherObserver)? = nil, callbackQueue: DispatchQueue? = nil)
        throws(LivePushError)
    {
        do { self.config = try config.validated() } catch { throw .config(error) }
        let bitrates = self.config.effectiveBitratesKbps
        bitrateController = BitrateController(targetKbps: bitrates.target, minKbps: bitrates.min,
                                              currentKbps: bitrates.initial, enabled: self.config.autoBitrate)
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
        lock.lock()
        defer { lock.unlock() }
        if let endpoint { throw .alreadyCapturing(group: endpoint.configuration.group) }
        if pipeline != nil { throw .alreadyCapturing(group: "(external video)") }
        let epochNs = MonotonicClock.nowNs()
        let settings = VideoPipelineSettings(
            width: config.videoWidth, height: config.videoHeight, fps: config.fps, gopSeconds: config.gopSeconds,
            bitrateKbps: bitrateController.currentKbps, encoder: config.encoder, scaleMode: config.scaleMode,
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
        var endpoint: PusherEndpoint?
        if let group {
            var endpointConfiguration = PusherEndpointConfiguration(group: group)
            endpointConfiguration.runtimeDirectory = runtimeDirectory
            endpointConfiguration.fps = UInt32(config.fps)
            do {
                endpoint = try PusherEndpoint(configuration: endpointConfiguration) { [weak self] event in
                    self?.handle(event)
                }
            } catch {
                throw reported(.screenCapture(error))
            }
        }
        var audioPipeline: AudioPipeline?
        if audio {
            do {
                audioPipeline = try AudioPipeline(settings: AudioPipelineSettings(
                    sampleRateHz: config.audioSampleRateHz, channels: config.audioChannels,
                    bitrateKbps: config.audioBitrateKbps, epochNs: epochNs))
            } catch {
                endpoint?.stop()
                throw reported(.encoder(error))
            }
        }
        box.endpoint = endpoint
        if let audioPipeline {
            connectAudio(audioPipeline)
            audioControls.apply(to: audioPipeline)  // what was set before capture started
        }
        if userPaused { pipeline.showPlaceholder(.paused) }
        picture.configure(watermarks: config.watermarks, mirrored: config.pushMirror) { path, problem in
            notify { $0.onWarning(code: LivePushWarningCode.watermarkUnreadable,
                                  message: "cannot use '\(path)' as a watermark (\(problem)); use a PNG or JPEG file. "
                                    + "The broadcast goes on without it", extraInfo: ["path": path]) }
        }
        picture.attach(pipeline.compositor)
        pipeline.onFirstFrame = { [weak self] in self?.notify { $0.onCaptureFirstVideoFrame() } }
        pipeline.onStall = { [weak self] durationMs, skipped in self?.warnStalled(durationMs: durationMs, skipped: skipped) }
        startAutoResolution(pipeline)
        pipeline.onEncoderError = { [weak self] error in
            self?.notify { $0.onError(code: LivePushErrorCode.encoderFailed, message: error.description, extraInfo: [:]) }
        }
        self.endpoint = endpoint
        self.pipeline = pipeline
        self.audioPipeline = audioPipeline
        pipeline.start()
        audioPipeline?.start()
        startStatistics()
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
    /// at the same frame rate; audio goes on. The reference SDK's pause.
    public func pause() {
        lock.lock()
        userPaused = true
        pipeline?.showPlaceholder(.paused)
        lock.unlock()
    }

    /// The screen again, from the next frame (a keyframe).
    public func resume() {
        lock.lock()
        userPaused = false
        if !helperPaused { pipeline?.hidePlaceholder(.paused) }
        lock.unlock()
    }

    /// Whether a placeholder is shown instead of the screen now, and why: "paused",
    /// "helperLost" or "networkPoor"; nil while the screen is shown.
    public var placeholderShown: String? {
        lock.lock()
        defer { lock.unlock() }
        return pipeline?.shownPlaceholder.map { "\($0)" }
    }

    private func connectAudio(_ audioPipeline: AudioPipeline) {
        sound.attach(audioPipeline)
        audioPipeline.onFirstSamples = { [weak self] _ in self?.notify { $0.onCaptureFirstAudioFrame() } }
        audioPipeline.onMicrophoneLevel = { [weak self] level in self?.notify { $0.onMicrophoneVolumeUpdate(volume: level) } }
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
        lock.lock()
        defer { lock.unlock() }
        return endpoint?.rendezvous.socketPath
    }

    /// Stops the helper (STOP), the pipeline, the push and any recording.
    public func stopScreenCapture() {
        stopPush()
        stopLocalRecording()
        stopMicrophone()
        sound.detach()
        picture.detach()
        lock.lock()
        let endpoint = self.endpoint, pipeline = self.pipeline, audioPipeline = self.audioPipeline
        self.endpoint = nil
        self.pipeline = nil
        self.audioPipeline = nil
        statisticsTimer?.cancel()
        statisticsTimer = nil
        lock.unlock()
        endpoint?.stop()
        pipeline?.stop()
        audioPipeline?.stop()
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
        lock.withLock {
            change(&audioControls)
            if let audioPipeline { audioControls.apply(to: audioPipeline) }
        }
    }

    /// Captures the microphone through PipeWire: the source named `name` (a node name, as
    /// `livepush devices` lists them) or the default one. Returns 0, or -1 when screen capture
    /// (which owns the audio pipeline) is not started, audio is off, or no microphone can be
    /// opened; then `onWarning(microphoneUnavailable)` says what is missing and how to fix it,
    /// and the stream carries silence.
    @discardableResult
    public func startMicrophone(name: String? = nil) -> Int32 {
        lock.lock()
        guard let audioPipeline, microphone == nil else {
            lock.unlock()
            return -1
        }
        let result = Microphone.open(name: name, pipeline: audioPipeline) { [weak self] event in
            self?.handle(event)
        }
        if case .success(let microphone) = result { self.microphone = microphone }
        lock.unlock()
        switch result {
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
        lock.lock()
        let microphone = self.microphone
        self.microphone = nil
        lock.unlock()
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
    public var statistics: LivePusherStatistics { lock.withLock { latestStatistics } }
    /// Written by the statistics tick under the lock.
    var latestStatistics = LivePusherStatistics()

    private func startStatistics() {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "livepush.statistics"))
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in self?.updateStatistics() }
        statisticsTimer = timer
        timer.resume()
    }

    private func updateStatistics() {
        lock.lock()
        guard let pipeline else { lock.unlock(); return }
        let counters = pipeline.counters
        let audioBytes = audioPipeline?.counters.bytes ?? 0
        let outputs = pushes.map { $0.takeFigures() }
        for (output, figures) in zip(pushes, outputs) { destinationFigures[ObjectIdentifier(output)] = figures }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpuSeconds = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        var figures = LivePusherStatistics()
        figures.appCpu = Int((100 * (cpuSeconds - lastCpuSeconds)).rounded())
        if let ticks = SystemCPU.ticks() {
            if let last = lastSystemTicks, ticks.total > last.total {
                figures.systemCpu = Int((100 * Double(ticks.busy - last.busy) / Double(ticks.total - last.total)).rounded())
            }
            lastSystemTicks = ticks
        }
        (figures.width, figures.height) = pipeline.outputSize
        (figures.sourceWidth, figures.sourceHeight) = pipeline.sourceSize
        figures.fps = counters.encoded - lastCounters.encoded
        figures.videoBitrateKbps = (counters.bytes - lastCounters.bytes) * 8 / 1000
        figures.audioBitrateKbps = (audioBytes - lastAudioBytes) * 8 / 1000
        figures.audioSampleRateHz = audioPipeline?.settings.sampleRateHz ?? 0
        figures.audioChannels = audioPipeline?.settings.channels ?? 0
        figures.framesRepeated = counters.repeated
        figures.framesSkipped = counters.skipped
        figures.videoSkippedFrames = counters.ticksSkipped
        figures.audioGapMs = audioPipeline?.gapMs ?? 0
        figures.keyframesForced = pipeline.keyframeRequests.forcedCount
        figures.recordingBytes = recording?.bytesWritten ?? 0
        figures.delayMs = outputs.map(\.delayMs).max() ?? 0
        figures.jitterMs = outputs.map(\.jitterMs).max() ?? 0
        figures.framesDropped = outputs.reduce(0) { $0 + $1.framesDropped }
        figures.queueMs = outputs.map(\.queuedMs).max() ?? 0
        figures.bytesSent = outputs.reduce(0) { $0 + $1.bytesSent }
        figures.sendBitrateKbps = outputs.reduce(0) { $0 + $1.sendRateKbps }
        let srt = outputs.compactMap(\.transport)
        figures.srtRttMs = Int((srt.map(\.rttMs).max() ?? 0).rounded())
        figures.srtPacketsLost = srt.reduce(0) { $0 + $1.packetsLost }
        figures.srtPacketsRetransmitted = srt.reduce(0) { $0 + $1.packetsRetransmitted }
        figures.srtPacketsDropped = srt.reduce(0) { $0 + $1.packetsDropped }
        figures.srtSendRateKbps = srt.reduce(0) { $0 + $1.sendRateKbps }
        lastCounters = counters
        lastAudioBytes = audioBytes
        lastCpuSeconds = cpuSeconds
        // Auto bitrate: the slowest publishing destination sets the pace of the one encode.
        let audioKbps = audioPipeline == nil ? 0 : config.audioBitrateKbps
        let decision = bitrateController.update(
            destinations: outputs.filter(\.isPublishing).map {
                .init(queuedMs: $0.queuedMs, sendRateKbps: $0.sendRateKbps, lossPercent: $0.transport?.lossPercent ?? 0)
            }, audioKbps: audioKbps)
        if let newKbps = decision { pipeline.setBitrate(kbps: newKbps) }
        updateNetworkPoor(outputs.filter(\.isPublishing), pipeline: pipeline)
        updateResolution(outputs.filter(\.isPublishing), pipeline: pipeline)
        figures.encoderBitrateKbps = bitrateController.currentKbps
        let levels = audioPipeline?.takeLevels() ?? [:]
        figures.micLevel = levels[.microphone] ?? 0
        figures.desktopLevel = levels[.desktop] ?? 0
        figures.videoProcessMs = pipeline.compositor.takeProcessFigures().meanMs
        latestStatistics = figures
        lock.unlock()
        let snapshot = figures
        if let newKbps = decision, bitrateController.lastChangeWasDown {
            notify { $0.onWarning(code: LivePushWarningCode.networkBusy,
                                  message: "the network is slower than the stream: video bitrate lowered to \(newKbps) kbps",
                                  extraInfo: ["bitrateKbps": String(newKbps)]) }
        }
        notify { $0.onStatisticsUpdate(snapshot) }
    }

    /// The poor-network picture replaces the screen once a destination has carried less than
    /// the minimum bitrate with a backlog for `networkPoorAfterMs`, and leaves once every queue
    /// has drained. Called with the lock held.
    private func updateNetworkPoor(_ outputs: [PushOutputFigures], pipeline: VideoPipeline) {
        let minKbps = bitrateController.minKbps
        let poor = outputs.contains {
            $0.queuedMs > BitrateController.congestedQueueMs && $0.sendRateKbps < minKbps
        }
        let drained = outputs.allSatisfy { $0.queuedMs < BitrateController.calmQueueMs }
        let nowNs = MonotonicClock.nowNs()
        if poor {
            let since = networkPoorSinceNs ?? nowNs
            networkPoorSinceNs = since
            if nowNs - since >= UInt64(config.networkPoorAfterMs) * 1_000_000 && pipeline.shownPlaceholder != .networkPoor {
                pipeline.showPlaceholder(.networkPoor)
            }
        } else if drained {
            networkPoorSinceNs = nil
            pipeline.hidePlaceholder(.networkPoor)
        }
    }

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
