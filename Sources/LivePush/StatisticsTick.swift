import CaptureLink
import Dispatch
import Glibc
import LinuxSystem
import Synchronization

/// The 1 Hz statistics tick and the congestion policy that runs on it: the figures of the last
/// second (`LivePusherStatistics`), auto bitrate (`BitrateController`), the poor-network picture
/// and adaptive resolution (`ResolutionController`). The one place that decides from the
/// destinations' queues what the encoder does.
///
/// Threads: the tick runs on `queue` (`livepush.statistics`, a serial queue with a 1 s timer). It
/// gathers its inputs with no lock of its own held (the pipelines' counters, each output's figures,
/// `/proc/stat`, `getrusage`), decides under `state`, then applies what it decided. `state` (a
/// `Mutex`, held for a few instructions) also serves the pusher's bitrate calls from any thread;
/// a new bitrate is handed to the pipeline (`VideoPipeline.setBitrate`, its own short `Mutex`)
/// under it, so that the encoder gets the bitrates in the order they were decided. Nothing else
/// is called under it.
final class StatisticsTick: Sendable {
    /// What the tick reads and steers: the pusher's parts while capture runs.
    struct Parts: @unchecked Sendable {
        var pipeline: VideoPipeline
        var audioPipeline: AudioPipeline?
        var endpoint: PusherEndpoint?
        var recording: LocalRecording?
        var replay: ReplayBuffer?
    }

    typealias Notify = @Sendable (@escaping @Sendable (any LivePusherObserver) -> Void) -> Void

    private struct State {
        var bitrate: BitrateController
        /// Adaptive resolution's decisions; nil when it is off.
        var resolution: ResolutionController?
        /// Since when the network has carried less than the minimum bitrate (ns), if it has.
        var networkPoorSinceNs: UInt64?
        /// Whether `onNetworkPoor` was the last of the pair sent (`onNetworkRecovered` comes once after it).
        var networkPoorReported = false
        var latest = LivePusherStatistics()
        /// The last tick's counters, for the rates of this one (the tick's own).
        var lastCounters = (encoded: 0, repeated: 0, skipped: 0, ticksSkipped: 0, bytes: 0)
        var lastAudioBytes = 0
        var lastCpuSeconds = 0.0
        var lastSystemTicks: (busy: UInt64, total: UInt64)?
    }

    /// What one tick decided, applied after `state` is let go.
    private struct Decision {
        var figures: LivePusherStatistics
        var loweredToKbps: Int?
        var networkPoor: Bool?
        /// `onNetworkPoor` (true) or `onNetworkRecovered` (false) to send.
        var networkPoorChange: Bool?
        var size: ResolutionController.Size?
        var fullSize = false
    }

    private let config: LivePushConfig
    private let outputs: PushOutputs
    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "livepush.statistics")
    /// The running timer; set and cancelled by the pusher's lifecycle calls.
    private let timer = Mutex<RunningTimer?>(nil)

    /// A dispatch source is safe to cancel from any thread; Dispatch does not say so on Linux.
    private struct RunningTimer: @unchecked Sendable {
        let source: DispatchSourceTimer
    }

    init(config: LivePushConfig, outputs: PushOutputs) {
        self.config = config
        self.outputs = outputs
        let bitrates = config.effectiveBitratesKbps
        state = Mutex(State(bitrate: BitrateController(targetKbps: bitrates.target, minKbps: bitrates.min,
                                                       currentKbps: bitrates.initial, enabled: config.autoBitrate)))
    }

    // MARK: Running

    /// Ticks once a second from now on: `parts` gives what capture runs (nil: nothing to do);
    /// `notify` sends to the observer. With `enableAutoResolution`, adaptive resolution starts
    /// again from the configured size.
    func start(parts: @escaping @Sendable () -> Parts?, notify: @escaping Notify) {
        let resolution = config.enableAutoResolution
            ? ResolutionController(width: config.videoWidth, height: config.videoHeight) : nil
        state.withLock {
            $0.resolution = resolution
            $0.networkPoorReported = false
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in
            guard let self, let parts = parts() else { return }
            self.tick(parts, notify: notify)
        }
        timer.resume()
        let previous = self.timer.withLock { current in
            defer { current = RunningTimer(source: timer) }
            return current
        }
        previous?.source.cancel()
    }

    /// Stops the timer and waits for a tick in progress. Never called on the tick's queue.
    func stop() {
        let timer = self.timer.withLock { timer in defer { timer = nil }; return timer }
        timer?.source.cancel()
        queue.sync {}
    }

    // MARK: Bitrate

    /// The latest figures.
    var latest: LivePusherStatistics { state.withLock { $0.latest } }

    /// Auto bitrate's target and minimum, and the encoder's bitrate now.
    var bitratesKbps: (target: Int, min: Int, current: Int) {
        state.withLock { ($0.bitrate.targetKbps, $0.bitrate.minKbps, $0.bitrate.currentKbps) }
    }

    /// `setTargetVideoBitrate`: false when `kbps` is under the minimum.
    func setTarget(kbps: Int, pipeline: VideoPipeline?) -> Bool {
        state.withLock {
            guard kbps >= $0.bitrate.minKbps else { return false }
            if let newKbps = $0.bitrate.setTarget(kbps) { pipeline?.setBitrate(kbps: newKbps) }
            return true
        }
    }

    /// `setMinVideoBitrate`: false when `kbps` is over the target.
    func setMin(kbps: Int, pipeline: VideoPipeline?) -> Bool {
        state.withLock {
            guard kbps <= $0.bitrate.targetKbps else { return false }
            if let newKbps = $0.bitrate.setMin(kbps) { pipeline?.setBitrate(kbps: newKbps) }
            return true
        }
    }

    /// A new pipeline, made with the bitrate of a moment ago, takes the one decided now (a bitrate
    /// call may have come in between, before the pipeline was there to take it).
    func applyBitrate(to pipeline: VideoPipeline) {
        state.withLock {
            if pipeline.bitrateKbps != $0.bitrate.currentKbps { pipeline.setBitrate(kbps: $0.bitrate.currentKbps) }
        }
    }

    /// Back to the initial bitrate (`restartPush`).
    func restartBitrate(pipeline: VideoPipeline?) {
        state.withLock {
            if let newKbps = $0.bitrate.restart() { pipeline?.setBitrate(kbps: newKbps) }
        }
    }

    // MARK: The tick

    private func tick(_ parts: Parts, notify: Notify) {
        let pipeline = parts.pipeline, audioPipeline = parts.audioPipeline
        let counters = pipeline.counters
        let audioBytes = audioPipeline?.counters.bytes ?? 0
        let outputs = outputs.takeFigures()
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpuSeconds = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        let systemTicks = SystemCPU.ticks()
        var figures = LivePusherStatistics()
        (figures.width, figures.height) = pipeline.outputSize
        (figures.sourceWidth, figures.sourceHeight) = pipeline.sourceSize
        figures.audioSampleRateHz = audioPipeline?.settings.sampleRateHz ?? 0
        figures.audioChannels = audioPipeline?.settings.channels ?? 0
        figures.framesRepeated = counters.repeated
        figures.framesSkipped = counters.skipped
        figures.videoSkippedFrames = counters.ticksSkipped
        figures.audioGapMs = audioPipeline?.gapMs ?? 0
        figures.keyframesForced = pipeline.keyframeRequests.forcedCount
        figures.recordingBytes = parts.recording?.bytesWritten ?? 0
        figures.replayBufferBytes = Int64(parts.replay?.bytesHeld ?? 0)
        // The network's figures: the destination with the longest round trip, its variation beside it.
        if let slowest = outputs.filter({ $0.roundTripMs != nil }).max(by: { $0.roundTripMs! < $1.roundTripMs! }) {
            figures.delayMs = PushOutputFigures.wholeMs(slowest.roundTripMs!)
            figures.jitterMs = PushOutputFigures.wholeMs(slowest.roundTripVariationMs)
        }
        figures.queueDelayMs = outputs.map(\.queueDelayMs).max() ?? 0
        figures.queueJitterMs = outputs.map(\.queueJitterMs).max() ?? 0
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
        let levels = audioPipeline?.takeLevels() ?? [:]
        figures.micLevel = levels[.microphone] ?? 0
        figures.desktopLevel = levels[.desktop] ?? 0
        figures.videoProcessMs = pipeline.compositor.takeProcessFigures().meanMs
        let publishing = outputs.filter(\.isPublishing)
        let audioKbps = audioPipeline == nil ? 0 : config.audioBitrateKbps
        let nowNs = MonotonicClock.nowNs()

        let decision = state.withLock { state -> Decision in
            // Both CPU figures on one scale, percent of all cores: the process's CPU time over the
            // machine's (every core's) ticks of the same second, from /proc/stat.
            let appCpuSeconds = cpuSeconds - state.lastCpuSeconds
            figures.appCpu = Int((100 * appCpuSeconds / Double(max(1, SystemCPU.coreCount))).rounded())
            if let ticks = systemTicks {
                if let last = state.lastSystemTicks, ticks.total > last.total {
                    let totalTicks = Double(ticks.total - last.total)
                    figures.systemCpu = Int((100 * Double(ticks.busy - last.busy) / totalTicks).rounded())
                    figures.appCpu = min(100, Int((100 * appCpuSeconds * SystemCPU.ticksPerSecond / totalTicks).rounded()))
                }
                state.lastSystemTicks = ticks
            }
            figures.fps = counters.encoded - state.lastCounters.encoded
            figures.videoBitrateKbps = (counters.bytes - state.lastCounters.bytes) * 8 / 1000
            figures.audioBitrateKbps = (audioBytes - state.lastAudioBytes) * 8 / 1000
            state.lastCounters = counters
            state.lastAudioBytes = audioBytes
            state.lastCpuSeconds = cpuSeconds
            // Auto bitrate: the slowest publishing destination sets the pace of the one encode.
            // With no destination at all (a recording alone), the target: nothing is congested on a disk.
            let newKbps = outputs.isEmpty ? state.bitrate.nothingPushed() : state.bitrate.update(
                destinations: publishing.map {
                    .init(queuedMs: $0.queuedMs, sendRateKbps: $0.sendRateKbps, lossPercent: $0.transport?.lossPercent ?? 0)
                }, audioKbps: audioKbps)
            if let newKbps { pipeline.setBitrate(kbps: newKbps) }
            var decision = Decision(figures: figures)
            if let newKbps, state.bitrate.lastChangeWasDown { decision.loweredToKbps = newKbps }
            decision.networkPoor = Self.networkPoor(publishing, minKbps: state.bitrate.minKbps,
                                                    afterMs: config.networkPoorAfterMs, nowNs: nowNs,
                                                    since: &state.networkPoorSinceNs)
            if let poor = decision.networkPoor, poor != state.networkPoorReported {
                state.networkPoorReported = poor
                decision.networkPoorChange = poor
            }
            if var controller = state.resolution, !publishing.isEmpty {
                decision.size = controller.update(
                    congested: publishing.contains { $0.queuedMs > BitrateController.congestedQueueMs },
                    calm: publishing.allSatisfy { $0.queuedMs < BitrateController.calmQueueMs },
                    bitrateKbps: state.bitrate.currentKbps, minKbps: state.bitrate.minKbps)
                decision.fullSize = controller.rung == 0
                state.resolution = controller
            }
            decision.figures.encoderBitrateKbps = state.bitrate.currentKbps
            state.latest = decision.figures
            return decision
        }

        switch decision.networkPoor {
        case true? where pipeline.shownPlaceholder != .networkPoor: pipeline.showPlaceholder(.networkPoor)
        case false?: pipeline.hidePlaceholder(.networkPoor)
        default: break
        }
        if let poor = decision.networkPoorChange { notify { poor ? $0.onNetworkPoor() : $0.onNetworkRecovered() } }
        if let size = decision.size { resize(to: size, full: decision.fullSize, parts) }
        if let newKbps = decision.loweredToKbps {
            notify { $0.onWarning(code: LivePushWarningCode.networkBusy,
                                  message: "the network is slower than the stream: video bitrate lowered to \(newKbps) kbps",
                                  extraInfo: ["bitrateKbps": String(newKbps)]) }
        }
        let snapshot = decision.figures
        notify { $0.onStatisticsUpdate(snapshot) }
    }

    /// The poor-network picture replaces the screen once a destination has carried less than the
    /// minimum bitrate with a backlog for `afterMs`, and leaves once every queue has drained: true
    /// to show it, false to take it away, nil to leave it as it is.
    private static func networkPoor(_ outputs: [PushOutputFigures], minKbps: Int, afterMs: Int, nowNs: UInt64,
                                    since sinceNs: inout UInt64?) -> Bool?
    {
        let poor = outputs.contains { $0.queuedMs > BitrateController.congestedQueueMs && $0.sendRateKbps < minKbps }
        let drained = outputs.allSatisfy { $0.queuedMs < BitrateController.calmQueueMs }
        if poor {
            let since = sinceNs ?? nowNs
            sinceNs = since
            return nowNs - since >= UInt64(afterMs) * 1_000_000 ? true : nil
        }
        if drained {
            sinceNs = nil
            return false
        }
        return nil
    }

    /// Adaptive resolution's step: the pipeline switches the encoder before its next frame. A helper
    /// granted LPC_CAP_SCALE is asked with CONFIG for the smaller size, so that it grabs less (and for
    /// WELCOME's maximum again at the configured size); one without it keeps sending full frames,
    /// which the pusher scales, because it may crop to a smaller CONFIG (SPEC §12.5, clarification 28).
    private func resize(to size: ResolutionController.Size, full: Bool, _ parts: Parts) {
        parts.pipeline.requestSize(width: size.width, height: size.height)
        if full {
            parts.endpoint?.requestFullSize()
        } else {
            parts.endpoint?.requestMaxSize(width: UInt32(size.width), height: UInt32(size.height))
        }
    }
}
