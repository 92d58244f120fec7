import CaptureLink
import Foundation
import Media
import Synchronization

/// What the video pipeline produces: sizes, rate, encoder.
struct VideoPipelineSettings: Sendable {
    var width: Int
    var height: Int
    var fps: Int
    var gopSeconds: Int
    var bitrateKbps: Int
    var encoder: H264EncoderName
    var scaleMode: ScaleMode
    /// CLOCK_MONOTONIC time of the shared timeline's zero: frame n is due at epoch + n / fps.
    var epochNs: UInt64
}

/// Why the pipeline shows a placeholder instead of the screen.
enum PlaceholderReason: Int, Comparable, CaseIterable, Sendable {
    /// The helper went away (exited, crashed, hung, broke the protocol) and has not come back.
    case helperLost
    /// `pause()`, or the helper sent PAUSE.
    case paused
    /// The network has carried less than the minimum bitrate for a while.
    case networkPoor

    static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    var notice: String {
        switch self {
        case .helperLost: "Screen capture interrupted"
        case .paused: "Paused"
        case .networkPoor: "Poor network"
        }
    }
}

/// The still pictures shown instead of the screen.
struct PlaceholderImages: Sendable {
    var pause: StillImage?
    var networkPoor: StillImage?
}

/// Where encoded media goes (recordings, RTMP outputs). Video arrives on the video pipeline's
/// thread, audio on the audio pipeline's; `ptsMs` is on the shared timeline (zero at the epoch).
protocol EncodedMediaSink: AnyObject, Sendable {
    func receive(_ packet: EncodedVideoPacket, ptsMs: Int64)
    func receiveAudio(_ packet: EncodedAudioPacket, ptsMs: Int64)
}

/// The video pipeline, on its own thread: at a constant output frame rate, on CLOCK_MONOTONIC
/// deadlines, it takes the newest frame the helper published (or repeats the last picture when
/// nothing new came), converts it to I420 at the output size, encodes it, and hands the packets
/// to the sinks. Frames are pooled: steady state allocates no pictures.
final class VideoPipeline: @unchecked Sendable {
    let settings: VideoPipelineSettings
    private let frameSource: @Sendable () -> BorrowedFrame?
    private let encoder: H264Encoder
    private let converter: FrameConverter
    private let picture: VideoFrame
    /// What is shown while a placeholder reason is active (drawn when the reasons change).
    private let placeholder: VideoFrame
    private let images: PlaceholderImages
    private let running = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let state = Mutex(State())
    /// Frames the helper published, and those the pipeline has seen (under `arrival`).
    private let arrival = NSCondition()
    private var arrivals: UInt64 = 0
    private var arrivalsTaken: UInt64 = 0
    /// Called once, on the pipeline thread, when the first helper frame was converted.
    var onFirstFrame: (@Sendable () -> Void)?
    /// Called on the pipeline thread when the encoder fails.
    var onEncoderError: (@Sendable (MediaError) -> Void)?
    /// Where the next outgoing picture is copied for a preview (`capturePreview`), under `preview`.
    private let preview = NSCondition()
    private var previewTarget: VideoFrame?
    /// The encoder's packets of one frame, and the sinks they go to: reused (no allocation per frame).
    private var packets: [EncodedVideoPacket] = []
    private var sinkList: [EncodedMediaSink] = []

    struct State {
        var sinks: [ObjectIdentifier: EncodedMediaSink] = [:]
        var keyframeRequested = false
        /// A bitrate to switch the encoder to before the next frame.
        var pendingBitrateKbps: Int?
        var bitrateKbps = 0
        var framesEncoded = 0
        var framesRepeated = 0
        var framesSkipped = 0
        var bytesEncoded = 0
        var lastSequence: UInt64 = 0
        /// Active reasons to show a placeholder; the highest one is shown.
        var placeholderReasons: Set<PlaceholderReason> = []
        var shownPlaceholder: PlaceholderReason?
        var framesPlaceholder = 0
    }

    init(settings: VideoPipelineSettings, images: PlaceholderImages = PlaceholderImages(),
         frameSource: @escaping @Sendable () -> BorrowedFrame?) throws(MediaError)
    {
        self.images = images
        self.settings = settings
        self.frameSource = frameSource
        var encoderSettings = H264EncoderSettings(width: settings.width, height: settings.height, fps: settings.fps,
                                                  bitrateKbps: settings.bitrateKbps)
        encoderSettings.gopSeconds = settings.gopSeconds
        encoderSettings.encoder = settings.encoder
        encoder = try H264Encoder(settings: encoderSettings)
        converter = FrameConverter(scaleMode: settings.scaleMode)
        picture = try VideoFrame(width: settings.width, height: settings.height)
        picture.fillBlack()
        placeholder = try VideoFrame(width: settings.width, height: settings.height)
        state.withLock { $0.bitrateKbps = settings.bitrateKbps }
    }

    /// The encoder, for outputs that need its parameters (a container's codec configuration).
    var videoEncoder: H264Encoder { encoder }

    func start() {
        guard !running.exchange(true, ordering: .sequentiallyConsistent) else { return }
        let thread = Thread { [self] in run() }
        thread.name = "livepush-video"
        thread.start()
    }

    /// Stops the thread after the frame in progress; drains the encoder into the sinks.
    func stop() {
        guard running.exchange(false, ordering: .sequentiallyConsistent) else { return }
        finished.wait()
    }

    func add(_ sink: EncodedMediaSink) {
        state.withLock {
            $0.sinks[ObjectIdentifier(sink)] = sink
            $0.keyframeRequested = true  // a new output starts on a keyframe
        }
    }

    /// The next frame will be a keyframe (an output that (re)connected starts there).
    func requestKeyframe() {
        state.withLock { $0.keyframeRequested = true }
    }

    /// The encoder's bitrate from the next frame on (auto bitrate, `setTargetVideoBitrate`).
    func setBitrate(kbps: Int) {
        state.withLock { $0.pendingBitrateKbps = kbps }
    }

    /// The bitrate the encoder runs at.
    var bitrateKbps: Int { state.withLock { $0.pendingBitrateKbps ?? $0.bitrateKbps } }

    /// Shows a placeholder for `reason` (until `hidePlaceholder(reason)`): the pause image or
    /// the poor-network image when configured, else the last picture dimmed with a notice.
    /// The output keeps its frame rate throughout.
    func showPlaceholder(_ reason: PlaceholderReason) {
        state.withLock { _ = $0.placeholderReasons.insert(reason) }
    }

    /// The screen again (from the next fresh frame on, which will be a keyframe) once no reason is left.
    func hidePlaceholder(_ reason: PlaceholderReason) {
        state.withLock { _ = $0.placeholderReasons.remove(reason) }
    }

    /// A new helper session: its frame sequence starts again from 1.
    func startNewSession() {
        state.withLock { $0.lastSequence = 0 }
    }

    /// The placeholder shown now, if any.
    var shownPlaceholder: PlaceholderReason? { state.withLock { $0.placeholderReasons.max() } }

    func remove(_ sink: EncodedMediaSink) {
        _ = state.withLock { $0.sinks.removeValue(forKey: ObjectIdentifier(sink)) }
    }

    /// Counters since the start: encoded, repeated and skipped frames, encoded bytes.
    var counters: (encoded: Int, repeated: Int, skipped: Int, bytes: Int) {
        state.withLock { ($0.framesEncoded, $0.framesRepeated, $0.framesSkipped, $0.bytesEncoded) }
    }

    /// Copies the next picture sent (the screen or the placeholder shown) into `target`, which
    /// has the output size; false when none was sent within `timeoutMs`. One caller at a time.
    func capturePreview(into target: VideoFrame, timeoutMs: Int) -> Bool {
        preview.lock()
        defer { preview.unlock() }
        previewTarget = target
        let deadline = Date(timeIntervalSinceNow: Double(timeoutMs) / 1000)
        while previewTarget != nil {
            if !preview.wait(until: deadline) {
                previewTarget = nil
                return false
            }
        }
        return true
    }

    private func copyPreview(from frame: VideoFrame) {
        preview.lock()
        defer { preview.unlock() }
        guard let target = previewTarget else { return }
        target.copyPicture(from: frame)
        previewTarget = nil
        preview.broadcast()
    }

    /// Frames that showed a placeholder, since the start.
    var framesPlaceholder: Int { state.withLock { $0.framesPlaceholder } }

    private func run() {
        defer { finished.signal() }
        let intervalNs = 1_000_000_000 / UInt64(settings.fps)
        let startNs = settings.epochNs
        var tick: UInt64 = 0
        var sawFirstFrame = false
        while running.load(ordering: .relaxed) {
            // Frame n is due at epoch + n / fps. Its window runs half an interval either side:
            // a helper frame that arrives in it is encoded at once (no waiting for the tick, so
            // the screen reaches viewers up to a frame sooner); with none by the window's end
            // the last picture is repeated. A helper pacing itself at the same rate thus locks
            // onto the ticks, whatever its phase.
            let dueNs = startNs + tick * intervalNs
            MonotonicClock.sleep(untilNs: tick == 0 ? dueNs : dueNs - intervalNs / 2)
            waitForFrame(untilNs: dueNs + intervalNs / 2)
            let fresh = takeNewestFrame()
            if fresh && !sawFirstFrame {
                sawFirstFrame = true
                onFirstFrame?()
            }
            if !fresh { state.withLock { $0.framesRepeated += 1 } }
            let (wanted, shown) = state.withLock { ($0.placeholderReasons.max(), $0.shownPlaceholder) }
            if wanted != shown {
                if let wanted { drawPlaceholder(wanted) }
                state.withLock {
                    $0.shownPlaceholder = wanted
                    // Back to the screen, or to another picture: start it on a keyframe.
                    $0.keyframeRequested = true
                }
            }
            if wanted != nil { state.withLock { $0.framesPlaceholder += 1 } }
            let (forceKeyframe, newBitrateKbps) = state.withLock { state -> (Bool, Int?) in
                defer {
                    state.keyframeRequested = false
                    state.pendingBitrateKbps = nil
                }
                return (state.keyframeRequested, state.pendingBitrateKbps)
            }
            if let newBitrateKbps {
                encoder.setBitrate(kbps: newBitrateKbps)
                state.withLock { $0.bitrateKbps = newBitrateKbps }
            }
            encodeAndDeliver(wanted == nil ? picture : placeholder, pts: Int64(tick), forceKeyframe: forceKeyframe)
            copyPreview(from: wanted == nil ? picture : placeholder)
            // Next frame; when behind by more than a frame, skip ticks rather than burst, so
            // timestamps stay on the clock.
            tick += 1
            let behind = (MonotonicClock.nowNs() - startNs) / intervalNs
            if behind > tick { tick = behind }
        }
        do {
            try encoder.encode(nil, pts: 0, into: &packets)
            deliver()
        } catch {
            onEncoderError?(error)
        }
    }

    /// The helper published a frame (or said nothing changed): the pipeline may encode now.
    func frameArrived() {
        arrival.lock()
        arrivals += 1
        arrival.signal()
        arrival.unlock()
    }

    /// Waits until a frame arrived that the pipeline has not taken yet, or until `deadlineNs`.
    private func waitForFrame(untilNs deadlineNs: UInt64) {
        arrival.lock()
        defer { arrival.unlock() }
        while arrivals == arrivalsTaken {
            let nowNs = MonotonicClock.nowNs()
            guard nowNs < deadlineNs, running.load(ordering: .relaxed) else { return }
            _ = arrival.wait(until: Date(timeIntervalSinceNow: Double(deadlineNs - nowNs) / 1e9))
        }
        arrivalsTaken = arrivals
    }

    /// Converts the newest helper frame into the output picture; false when there was none new.
    private func takeNewestFrame() -> Bool {
        guard let frame = frameSource() else { return false }
        defer { frame.release() }
        let info = frame.info
        let isNew = state.withLock { state -> Bool in
            guard info.sequence > state.lastSequence else { return false }
            if state.lastSequence != 0 { state.framesSkipped += Int(info.sequence - state.lastSequence - 1) }
            state.lastSequence = info.sequence
            return true
        }
        guard isNew else { return false }
        let format: SourcePixelFormat
        switch info.format {
        case .bgrx, .bgra: format = .bgrx
        case .rgbx, .rgba: format = .rgbx
        case .nv12: format = .nv12
        case .i420: format = .i420
        }
        do {
            try frame.withPlanes { planes in
                try converter.convert(SourcePicture(format: format, width: info.width, height: info.height,
                                                    planes: planes, strides: info.strides), into: picture)
            }
        } catch {
            return false
        }
        return true
    }

    /// Draws the placeholder for `reason`: its image when configured, else the last picture
    /// dimmed with a notice.
    private func drawPlaceholder(_ reason: PlaceholderReason) {
        let image = reason == .networkPoor ? images.networkPoor ?? images.pause : images.pause
        if let image, (try? image.render(into: placeholder, scaleMode: settings.scaleMode)) != nil { return }
        placeholder.copyPicture(from: picture)
        placeholder.dim(toPercent: 40)
        placeholder.drawNotice(reason.notice)
    }

    private func encodeAndDeliver(_ frame: VideoFrame, pts: Int64, forceKeyframe: Bool) {
        frame.requestKeyframe(forceKeyframe)
        do {
            try encoder.encode(frame, pts: pts, into: &packets)
            deliver()
        } catch {
            onEncoderError?(error)
        }
    }

    /// Hands `packets` to the sinks (copied into `sinkList` under the lock, into its kept capacity).
    private func deliver() {
        guard !packets.isEmpty else { return }
        var sinks = sinkList
        sinkList = []
        sinks.removeAll(keepingCapacity: true)
        state.withLock { state in
            state.framesEncoded += packets.count
            for packet in packets { state.bytesEncoded += packet.payload.count }
            for sink in state.sinks.values { sinks.append(sink) }
        }
        for packet in packets {
            let ptsMs = packet.pts * 1000 / Int64(settings.fps)
            for sink in sinks { sink.receive(packet, ptsMs: ptsMs) }
        }
        sinks.removeAll(keepingCapacity: true)
        sinkList = sinks
        // Drop this frame's packets now, so the pool can reuse them once the sinks are done.
        packets.removeAll(keepingCapacity: true)
    }
}
