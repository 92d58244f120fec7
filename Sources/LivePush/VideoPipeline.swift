import CaptureLink
import Foundation
import LinuxSystem
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
    /// x264's preset, profile, tune and threads.
    var tuning = H264EncoderTuning()
    /// CLOCK_MONOTONIC time of the shared timeline's zero: frame n is due at epoch + n / fps.
    var epochNs: UInt64
}

/// Where encoded media goes (recordings, RTMP outputs). Video arrives on the video pipeline's
/// thread, audio on the audio pipeline's; `ptsMs` is on the shared timeline (zero at the epoch).
protocol EncodedMediaSink: AnyObject, Sendable {
    func receive(_ packet: EncodedVideoPacket, ptsMs: Int64)
    func receiveAudio(_ packet: EncodedAudioPacket, ptsMs: Int64)
    /// A mix packet with the same instant's packet of each source's own track (`SourceTracks`, in
    /// its order; empty without `--record-tracks`). Only a recording keeps them: by default the
    /// tracks are left aside and the mix goes to `receiveAudio(_:ptsMs:)`.
    func receiveAudio(_ packet: EncodedAudioPacket, ptsMs: Int64, sourceTracks: [EncodedAudioPacket])
    /// The video encoder was replaced (adaptive resolution: a new size, new SPS and PPS); called
    /// on the video pipeline's thread before its first packet, and when the sink is added.
    func videoEncoderChanged(_ encoder: H264Encoder)
    /// Whether it takes the live encode's video packets: a recording with an encode of its own does
    /// not. While sinks are attached and none takes them, the pipeline skips the live encode.
    var takesLiveVideo: Bool { get }
}

extension EncodedMediaSink {
    func receiveAudio(_ packet: EncodedAudioPacket, ptsMs: Int64, sourceTracks: [EncodedAudioPacket]) {
        receiveAudio(packet, ptsMs: ptsMs)
    }
    func videoEncoderChanged(_ encoder: H264Encoder) {}
    var takesLiveVideo: Bool { true }
}

/// The video pipeline, on its own thread: at a constant output frame rate, on CLOCK_MONOTONIC
/// deadlines, it takes the newest frame the helper published (or repeats the last picture when
/// nothing new came), converts it to I420 at the output size, encodes it, and hands the packets
/// to the sinks. Frames are pooled: steady state allocates no pictures. Each tick: convert into
/// the compositor's screen picture -> `compositor.compose()` -> encode the composed picture.
final class VideoPipeline: @unchecked Sendable {
    let settings: VideoPipelineSettings
    private let frameSource: @Sendable () -> BorrowedFrame?
    /// The encoder, the picture and the placeholder are replaced when the output size changes
    /// (`requestSize`, on the pipeline thread); `sharedEncoder` (a `Mutex`) publishes it to others.
    private var encoder: H264Encoder
    private let sharedEncoder: Mutex<SharedEncoder>
    private let converter: FrameConverter
    /// The outgoing picture: placeholders and the drawing on top of the screen.
    let compositor: VideoCompositor
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
    /// SEI messages for the next access units (`LivePusher.sendMessage`).
    let sei: SEIInjector
    /// Pictures the application sends itself (`LivePusher.sendVideoFrame`): a second frame source,
    /// taken before the helper's when it has a new one.
    let external = ExternalFrameSource()
    /// Keyframes asked for from outside (a viewer joined: `LivePusher.requestKeyframe`).
    let keyframeRequests = KeyframeRequests()
    /// The encoder's packets of one frame, and the sinks they go to: reused (no allocation per frame).
    private var packets: [EncodedVideoPacket] = []
    private var sinkList: [EncodedMediaSink] = []

    struct State {
        var sinks: [ObjectIdentifier: EncodedMediaSink] = [:]
        /// The one sink that also takes the pictures (a recording of its own quality).
        var pictureSink: PictureSink?
        var keyframeRequested = false
        /// A bitrate to switch the encoder to before the next frame.
        var pendingBitrateKbps: Int?
        var bitrateKbps = 0
        var framesEncoded = 0
        var framesRepeated = 0
        var framesSkipped = 0
        /// Output ticks the pipeline could not run in time (the machine or the process was busy or
        /// stopped): each leaves one picture out, never shifting the timestamps of those that follow.
        var ticksSkipped = 0
        var bytesEncoded = 0
        var lastSequence: UInt64 = 0
        /// A size to switch the output to before the next frame (adaptive resolution).
        var pendingSize: (width: Int, height: Int)?
        var outputSize = (width: 0, height: 0)
        /// The size of the last helper frame converted (a scaling helper's frames shrink with CONFIG).
        var sourceSize = (width: 0, height: 0)
    }

    init(settings: VideoPipelineSettings, images: PlaceholderImages = PlaceholderImages(),
         frameSource: @escaping @Sendable () -> BorrowedFrame?) throws(MediaError)
    {
        self.settings = settings
        self.frameSource = frameSource
        sei = SEIInjector(gopFrames: settings.fps * settings.gopSeconds)
        var encoderSettings = H264EncoderSettings(width: settings.width, height: settings.height, fps: settings.fps,
                                                  bitrateKbps: settings.bitrateKbps)
        encoderSettings.gopSeconds = settings.gopSeconds
        encoderSettings.encoder = settings.encoder
        encoderSettings.tuning = settings.tuning
        encoder = try H264Encoder(settings: encoderSettings)
        sharedEncoder = Mutex(SharedEncoder(encoder: encoder))
        converter = FrameConverter(scaleMode: settings.scaleMode)
        compositor = try VideoCompositor(width: settings.width, height: settings.height, scaleMode: settings.scaleMode,
                                         images: images)
        state.withLock {
            $0.bitrateKbps = settings.bitrateKbps
            $0.outputSize = (settings.width, settings.height)
        }
    }

    /// The encoder, for outputs that need its parameters (a container's codec configuration).
    var videoEncoder: H264Encoder { sharedEncoder.withLock { $0.encoder } }

    /// The live encoder as other threads see it: they read its parameters, the pipeline thread
    /// alone encodes with it.
    private struct SharedEncoder: @unchecked Sendable {
        var encoder: H264Encoder
    }

    /// The size encoded now (the configured one, unless adaptive resolution changed it).
    var outputSize: (width: Int, height: Int) { state.withLock { $0.outputSize } }

    /// Encodes at `width` x `height` from the next frame on: a new encoder (a keyframe, new SPS
    /// and PPS, which the sinks get through `videoEncoderChanged`), the last picture scaled.
    func requestSize(width: Int, height: Int) {
        state.withLock { $0.pendingSize = (width, height) }
    }

    /// Called on the pipeline thread after the output size changed.
    var onSizeChanged: (@Sendable (_ width: Int, _ height: Int) -> Void)?

    func start() {
        guard !running.exchange(true, ordering: .sequentiallyConsistent) else { return }
        let thread = Thread { [self] in
            ThreadName.setCurrent("livepush-video")
            run()
        }
        thread.start()
    }

    /// Stops the thread after the frame in progress; drains the encoder into the sinks.
    func stop() {
        guard running.exchange(false, ordering: .sequentiallyConsistent) else { return }
        finished.wait()
    }

    func add(_ sink: EncodedMediaSink) {
        let resized = state.withLock {
            $0.sinks[ObjectIdentifier(sink)] = sink
            if let pictures = sink as? PictureSink { $0.pictureSink = pictures }
            $0.keyframeRequested = true  // a new output starts on a keyframe
            return $0.outputSize != (settings.width, settings.height)
        }
        if resized { sink.videoEncoderChanged(videoEncoder) }
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

    /// Shows a placeholder for `reason` (until `hidePlaceholder(reason)`); the output keeps its
    /// frame rate throughout (`VideoCompositor`).
    func showPlaceholder(_ reason: PlaceholderReason) { compositor.showPlaceholder(reason) }

    /// The screen again (from the next fresh frame on, which will be a keyframe) once no reason is left.
    func hidePlaceholder(_ reason: PlaceholderReason) { compositor.hidePlaceholder(reason) }

    /// A new helper session: its frame sequence starts again from 1.
    func startNewSession() {
        state.withLock { $0.lastSequence = 0 }
    }

    /// The placeholder shown now, if any.
    var shownPlaceholder: PlaceholderReason? { compositor.shownPlaceholder }

    func remove(_ sink: EncodedMediaSink) {
        state.withLock {
            $0.sinks.removeValue(forKey: ObjectIdentifier(sink))
            if $0.pictureSink === sink as AnyObject { $0.pictureSink = nil }
        }
    }

    /// Counters since the start: encoded, repeated and skipped frames (helper frames a newer one
    /// replaced), output ticks skipped (pictures left out), encoded bytes.
    var counters: (encoded: Int, repeated: Int, skipped: Int, ticksSkipped: Int, bytes: Int) {
        state.withLock { ($0.framesEncoded, $0.framesRepeated, $0.framesSkipped, $0.ticksSkipped, $0.bytesEncoded) }
    }

    /// A run of skipped ticks this long or longer is a stall of the pusher (`onStall`); shorter
    /// ones (a busy machine) are only counted.
    static let stallThresholdMs = 300

    /// Called on the pipeline thread after it was off the clock for `stallThresholdMs` or more
    /// (the process was stopped or starved): how long, and how many pictures were left out.
    var onStall: (@Sendable (_ durationMs: Int, _ picturesSkipped: Int) -> Void)?

    /// The size of the last frame taken from the helper (0x0 before the first).
    var sourceSize: (width: Int, height: Int) { state.withLock { $0.sourceSize } }

    /// Copies the next picture sent (the screen or the placeholder shown) into `target`, which
    /// has the output size; false when none was sent within `timeoutMs`. Callers may wait at once.
    func capturePreview(into target: VideoFrame, timeoutMs: Int) -> Bool {
        compositor.capturePicture(into: target, timeoutMs: timeoutMs)
    }

    /// Frames that showed a placeholder, since the start.
    var framesPlaceholder: Int { compositor.framesPlaceholder }

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
            if let size = state.withLock({ state in defer { state.pendingSize = nil }; return state.pendingSize }) {
                resize(to: size)
            }
            // convert -> compose -> encode. Whatever fills the picture (the helper's frame here, an
            // app's own frame) writes into `compositor.screen` before `compose`, so that watermarks,
            // the mirror and the hook apply to it; every encoder takes `composed.frame` after it.
            let fresh = takeNewestFrame()
            if fresh && !sawFirstFrame {
                sawFirstFrame = true
                onFirstFrame?()
            }
            if !fresh { state.withLock { $0.framesRepeated += 1 } }
            let composed = compositor.compose(ptsMs: Int64(tick) * 1000 / Int64(settings.fps))
            // Back to the screen, or to another picture: start it on a keyframe.
            let asked = keyframeRequests.takeDue(nowNs: MonotonicClock.nowNs())  // a viewer joined
            if composed.startsNewPicture || asked { state.withLock { $0.keyframeRequested = true } }
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
            // Only a recording of its own quality attached (`livepush screen FILE --record-quality`):
            // no live encode, its packets would go nowhere. A live output added later gets a keyframe.
            let liveWanted = state.withLock { $0.sinks.isEmpty || $0.sinks.values.contains { $0.takesLiveVideo } }
            if liveWanted {
                encodeAndDeliver(composed.frame, pts: Int64(tick), forceKeyframe: forceKeyframe)
            } else {
                state.withLock { $0.framesEncoded += 1 }  // the picture the recording encodes
            }
            state.withLock { $0.pictureSink }?.receivePicture(composed.frame, pts: Int64(tick))
            // Next frame. A picture's timestamp is its tick's time on the clock (tick n is due at
            // epoch + n / fps), never a count of pictures: when behind by more than a frame (the
            // machine was busy, the process stopped), the ticks missed are skipped, not burst, so
            // each leaves one picture out and those that follow keep their time (and the sound's).
            tick += 1
            let nowNs = MonotonicClock.nowNs()
            let behind = (nowNs - startNs) / intervalNs
            if behind > tick {
                let skipped = Int(behind - tick)
                state.withLock { $0.ticksSkipped += skipped }
                // Off the clock from the tick just due (the stall's length, to the nearest frame).
                let offClockMs = Int((nowNs - (startNs + tick * intervalNs)) / 1_000_000)
                if offClockMs >= Self.stallThresholdMs { onStall?(offClockMs, skipped) }
                tick = behind
            }
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
        if let converted = external.convertNewest(using: converter, into: compositor.screen) { return converted }
        guard let frame = frameSource() else { return false }
        // Converted once: its slot goes back to the helper now (the pusher maps one slot, not three).
        defer { frame.releaseConsumed() }
        let info = frame.info
        let isNew = state.withLock { state -> Bool in
            guard info.sequence > state.lastSequence else { return false }
            if state.lastSequence != 0 { state.framesSkipped += Int(info.sequence - state.lastSequence - 1) }
            state.lastSequence = info.sequence
            state.sourceSize = (Int(info.width), Int(info.height))
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
                                                    planes: planes, strides: info.strides),
                                      into: compositor.screen)
            }
        } catch {
            return false
        }
        return true
    }

    /// A new encoder and pictures at `size`; the sinks hear of the encoder before its first packet.
    private func resize(to size: (width: Int, height: Int)) {
        guard size != (compositor.width, compositor.height) else { return }
        do {
            var encoderSettings = encoder.settings
            (encoderSettings.width, encoderSettings.height) = size
            encoderSettings.bitrateKbps = encoder.bitrateKbps
            let newEncoder = try H264Encoder(settings: encoderSettings)
            try compositor.resize(width: size.width, height: size.height)
            encoder = newEncoder
            sharedEncoder.withLock { $0.encoder = newEncoder }
            let sinks = state.withLock { state in
                state.outputSize = size
                state.keyframeRequested = true
                return Array(state.sinks.values)
            }
            for sink in sinks { sink.videoEncoderChanged(newEncoder) }
            onSizeChanged?(size.width, size.height)
        } catch {
            onEncoderError?(error)
        }
    }

    private func encodeAndDeliver(_ frame: VideoFrame, pts: Int64, forceKeyframe: Bool) {
        frame.requestKeyframe(sei.prepare(frame, forceKeyframe: forceKeyframe))
        defer { frame.clearUserDataSEI() }
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
            if packet.isKeyframe { keyframeRequests.keyframeEncoded(nowNs: MonotonicClock.nowNs()) }
            let ptsMs = packet.pts * 1000 / Int64(settings.fps)
            for sink in sinks { sink.receive(packet, ptsMs: ptsMs) }
        }
        sinks.removeAll(keepingCapacity: true)
        sinkList = sinks
        // Drop this frame's packets now, so the pool can reuse them once the sinks are done.
        packets.removeAll(keepingCapacity: true)
    }
}
