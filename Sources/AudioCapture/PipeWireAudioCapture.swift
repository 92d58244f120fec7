import CPipeWire
import LinuxSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Captures one PipeWire source (a microphone, or the monitor of a sink for desktop audio) as
/// interleaved 32-bit float chunks of exactly `chunkMs`.
///
/// **Threads.** The stream's `process` runs on the context's data loop, which PipeWire's
/// `client-rt.conf` makes real-time (`PipeWireConnection(realtime:)`): it only copies each buffer,
/// with the time of its first sample, into a `SampleHandoff` and wakes the thread loop. Everything
/// else runs on PipeWire's thread loop (`livepush-mic` or `livepush-desk`): the re-chunking, the
/// timeline, `onChunk` and `onEvent`, with the loop locked: keep them cheap (copy the chunk into
/// a queue), and never call `stop()` from them. A thread loop that runs late (a busy machine, a
/// slow `onChunk`) finds its samples waiting instead of losing them.
///
/// **Timestamps.** For each buffer PipeWire gives `pw_time.now` (CLOCK_MONOTONIC ns of the
/// graph cycle that produced it) and `delay` (how long a sample took to travel from the device
/// to the stream, resampler included). The first sample of a buffer was therefore captured at
/// `now - delay - buffered - frames / rate` (minus the buffers still queued behind it when the
/// callback runs late). Chunks follow one sample-exact timeline anchored on
/// that estimate: chunk k+1's `ptsNs` is chunk k's plus `chunkMs` (to the nanosecond, from the
/// sample count), so consecutive chunks are contiguous. When the estimate and the timeline
/// disagree by more than `resyncThresholdNs` for three buffers in a row (a dropout, the source
/// lost and back, a graph reconfiguration; one late callback is not enough: `CaptureTimeline`),
/// the partial chunk is dropped and the timeline re-anchors on the estimate (never before the
/// end of the last delivered chunk: `ptsNs` only grows, as AUDIO requires).
///
/// **Named sources.** With `target` set, the stream asks for that node only
/// (`node.dont-reconnect`: never silently moved to another device). If the node goes away,
/// `sourceLost(name)` is sent and no chunks arrive; when a node with the same name appears
/// again a new stream is connected to it and `sourceReturned(name)` is sent. (WirePlumber
/// destroys such a stream when it cannot place it yet, as with a node that has just appeared;
/// it is then re-created every 300 ms while the target exists.) With no target
/// the session manager picks (and moves the stream between) default sources; no events then.
public final class PipeWireAudioCapture: @unchecked Sendable {
    private let session: CaptureSession

    /// Connects to PipeWire, finds the source, connects a capture stream to it and waits (up to
    /// 3 s) for its format to be negotiated.
    public init(
        settings: AudioCaptureSettings, onChunk: @escaping @Sendable (PCMChunk) -> Void,
        onEvent: @escaping @Sendable (AudioCaptureEvent) -> Void
    ) throws(AudioCaptureError) {
        guard (1...8).contains(settings.channels) else {
            throw .streamFailed("\(settings.channels) channels asked; use 1 to 8")
        }
        guard (1...1000).contains(settings.chunkMs) else {
            throw .streamFailed("chunks of \(settings.chunkMs) ms asked; use 1 to 1000 ms")
        }
        if let rate = settings.sampleRate, !(8000...192_000).contains(rate) {
            throw .streamFailed("a sample rate of \(rate) Hz asked; use 8000 to 192000 Hz")
        }
        session = try CaptureSession(settings: settings, onChunk: onChunk, onEvent: onEvent)
    }

    deinit {
        session.stop()
    }

    /// The rate of the delivered chunks, in Hz, as negotiated with PipeWire.
    public var sampleRate: Int { session.negotiatedRateHz.load(ordering: .relaxed) }

    /// The node name being captured (the sink's name for a monitor), nil for "the default source".
    public var sourceName: String? { session.targetName }

    /// Chunks delivered so far.
    public var chunksDelivered: Int { session.chunksDelivered.load(ordering: .relaxed) }

    /// Disconnects and frees everything; no callback runs after it returns. Idempotent.
    /// Not from inside `onChunk` or `onEvent`.
    public func stop() {
        session.stop()
    }
}

/// The state of one capture, reached from C callbacks through `Unmanaged`. Fields are touched
/// on the loop thread or under its lock, except the atomics.
private final class CaptureSession: @unchecked Sendable {
    let settings: AudioCaptureSettings
    let onChunk: @Sendable (PCMChunk) -> Void
    let onEvent: @Sendable (AudioCaptureEvent) -> Void
    let graph: PipeWireGraph
    /// The node followed for lost/returned events, nil when capturing "the default source".
    let targetName: String?
    let targetKind: PipeWireNode.Kind
    let negotiatedRateHz = Atomic<Int>(0)
    let chunksDelivered = Atomic<Int>(0)

    private var targetNodeID: UInt32?
    private var stream: OpaquePointer?
    private let streamListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let streamEvents = UnsafeMutablePointer<pw_stream_events>.allocate(capacity: 1)
    private var streamError: String?
    /// Re-links the stream when the session manager dropped it while its target exists.
    private var retryTimer: UnsafeMutablePointer<spa_source>?
    static let retryDelayMs: UInt64 = 300
    private var stopped = false  // on the loop thread
    private let stopRequested = Atomic<Bool>(false)

    // Negotiated format and the re-chunking state.
    private var channels = 0
    private var chunkFrames = 0
    private var pending: [Float] = []
    private var timeline = CaptureTimeline()
    private var sentFirstChunk = false

    // Shared with the data loop: the buffers it copied, and what it needs to copy them.
    private let handoff = SampleHandoff()
    /// The connected stream's pointer for the data loop (0: none); set before connecting, cleared
    /// before destroying (pw_stream_destroy waits for a `process` under way).
    private let realtimeStream = Atomic<UInt>(0)
    private let negotiatedChannels = Atomic<Int>(0)
    /// Counts the streams connected: buffers of an earlier one are left undelivered.
    private let streamGeneration = Atomic<Int>(0)
    /// Wakes the thread loop to drain `handoff`.
    private var drainEvent: UnsafeMutablePointer<spa_source>?

    static let formatTimeoutMs = 3000

    init(
        settings: AudioCaptureSettings, onChunk: @escaping @Sendable (PCMChunk) -> Void,
        onEvent: @escaping @Sendable (AudioCaptureEvent) -> Void
    ) throws(AudioCaptureError) {
        self.settings = settings
        self.onChunk = onChunk
        self.onEvent = onEvent
        streamListener.initialize(to: spa_hook())
        streamEvents.initialize(to: pw_stream_events())
        let graph: PipeWireGraph
        do {
            graph = try PipeWireGraph(name: settings.captureSinkMonitor ? "livepush-desk" : "livepush-mic",
                                      remote: settings.remote, realtime: true)
        } catch {
            streamListener.deallocate()
            streamEvents.deallocate()
            throw error
        }
        self.graph = graph
        // Which node to follow.
        pw_thread_loop_lock(graph.threadLoop)
        let found = Self.resolveTarget(settings, graph: graph)
        pw_thread_loop_unlock(graph.threadLoop)
        switch found {
        case .success(let target):
            targetName = target?.name
            targetKind = target?.kind ?? .source
            targetNodeID = target?.id
        case .failure(let error):
            targetName = nil
            targetKind = .source
            close()
            throw error
        }
        do throws(AudioCaptureError) {
            try start()
        } catch {
            close()
            throw error
        }
    }

    deinit {
        streamListener.deallocate()
        streamEvents.deallocate()
    }

    private static func resolveTarget(_ settings: AudioCaptureSettings, graph: PipeWireGraph)
        -> Result<PipeWireNode?, AudioCaptureError>
    {
        let nodes = graph.nodes.values.sorted { $0.id < $1.id }
        let available = graph.sourcesLocked().map(\.name)
        if settings.captureSinkMonitor {
            guard let name = settings.target ?? graph.defaultSinkLocked() else {
                return .failure(.sourceNotFound(name: "the default sink (for desktop audio)", available: available))
            }
            guard let sink = nodes.first(where: { $0.kind == .sink && $0.name == name }) else {
                return .failure(.sourceNotFound(name: name, available: available))
            }
            return .success(sink)
        }
        guard let name = settings.target else { return .success(nil) }
        // A source of that name, else a sink of that name (its monitor).
        guard let node = nodes.first(where: { $0.kind == .source && $0.name == name })
            ?? nodes.first(where: { $0.kind == .sink && $0.name == name })
        else {
            return .failure(.sourceNotFound(name: name, available: available))
        }
        return .success(node)
    }

    private func start() throws(AudioCaptureError) {
        pw_thread_loop_lock(graph.threadLoop)
        defer { pw_thread_loop_unlock(graph.threadLoop) }
        let unmanagedSelf = Unmanaged.passUnretained(self)
        graph.onNodeAdded = { node in unmanagedSelf.takeUnretainedValue().nodeAdded(node) }
        graph.onNodeRemoved = { node in unmanagedSelf.takeUnretainedValue().nodeRemoved(node) }
        graph.onDaemonLost = { message in unmanagedSelf.takeUnretainedValue().daemonLost(message) }
        retryTimer = CPipeWire_pw_loop_add_timer(pw_thread_loop_get_loop(graph.threadLoop), captureRetryTimer,
                                                 unmanagedSelf.toOpaque())
        drainEvent = CPipeWire_pw_loop_add_event(pw_thread_loop_get_loop(graph.threadLoop), captureDrain,
                                                 unmanagedSelf.toOpaque())
        try connectStreamLocked()
        // Wait for the format. A named source's stream that fails is re-linked (retryLater), so
        // only the deadline ends that wait; with no target a failure ends it at once.
        let deadlineMs = MonotonicClock.nowMs() + Self.formatTimeoutMs
        while negotiatedRateHz.load(ordering: .relaxed) == 0 && (streamError == nil || targetName != nil) {
            let remainingMs = deadlineMs - MonotonicClock.nowMs()
            if remainingMs <= 0 {
                let why = streamError.map { " (last error: \($0))" } ?? ""
                throw .streamFailed("no audio format was negotiated with '\(targetName ?? "the default source")' "
                    + "within \(Self.formatTimeoutMs) ms\(why); is a session manager (wireplumber) running to link it?")
            }
            graph.waitLocked(timeoutMs: remainingMs)
        }
        if negotiatedRateHz.load(ordering: .relaxed) == 0, let streamError { throw .streamFailed(streamError) }
    }

    /// Creates and connects a new capture stream to the target; the loop lock is held.
    private func connectStreamLocked() throws(AudioCaptureError) {
        guard let core = graph.core else { throw .streamFailed("not connected to PipeWire") }
        let properties = CPipeWire_pw_properties_new_empty()
        pw_properties_set(properties, PW_KEY_MEDIA_TYPE, "Audio")
        pw_properties_set(properties, PW_KEY_MEDIA_CATEGORY, "Capture")
        pw_properties_set(properties, PW_KEY_APP_NAME, "LivePush")
        let nodeName = settings.captureSinkMonitor ? "livepush-desktop-audio" : "livepush-audio-capture"
        pw_properties_set(properties, PW_KEY_NODE_NAME, nodeName)
        if let targetName {
            pw_properties_set(properties, PW_KEY_TARGET_OBJECT, targetName)
            pw_properties_set(properties, PW_KEY_NODE_DONT_RECONNECT, "true")
            if targetKind == .sink { pw_properties_set(properties, PW_KEY_STREAM_CAPTURE_SINK, "true") }
        }
        // pw_stream_new takes ownership of the properties.
        guard let stream = pw_stream_new(core, nodeName, properties) else {
            throw .streamFailed("pw_stream_new failed (errno \(errno))")
        }
        self.stream = stream
        streamError = nil
        streamGeneration.add(1, ordering: .relaxed)
        realtimeStream.store(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(stream))), ordering: .releasing)
        streamEvents.pointee = pw_stream_events()
        streamEvents.pointee.version = UInt32(PW_VERSION_STREAM_EVENTS)
        streamEvents.pointee.state_changed = captureStateChanged
        streamEvents.pointee.param_changed = captureParamChanged
        streamEvents.pointee.process = captureProcess
        streamListener.initialize(to: spa_hook())
        pw_stream_add_listener(stream, streamListener, streamEvents, Unmanaged.passUnretained(self).toOpaque())

        var podBytes = [UInt8](repeating: 0, count: 1024)
        let result = podBytes.withUnsafeMutableBufferPointer { bytes -> Int32 in
            guard let format = CPipeWire_build_f32_audio_format(
                bytes.baseAddress, UInt32(bytes.count), UInt32(settings.sampleRate ?? 0), UInt32(settings.channels))
            else { return -ENOSPC }
            return CPipeWire_pw_stream_connect_capture(stream, format)
        }
        if result < 0 {
            destroyStreamLocked()
            throw .streamFailed("pw_stream_connect failed: \(String(cString: strerror(-result)))")
        }
    }

    private func destroyStreamLocked() {
        guard let stream else { return }
        realtimeStream.store(0, ordering: .releasing)
        spa_hook_remove(streamListener)
        pw_stream_destroy(stream)
        self.stream = nil
    }

    func stop() {
        // Checked before touching the loop: after the first stop it is destroyed.
        guard !stopRequested.exchange(true, ordering: .sequentiallyConsistent) else { return }
        // Stopping joins PipeWire's thread, which cannot join itself.
        precondition(!pw_thread_loop_in_thread(graph.threadLoop),
                     "PipeWireAudioCapture.stop() was called from onChunk or onEvent; call it from another thread")
        pw_thread_loop_lock(graph.threadLoop)
        stopped = true
        if let retryTimer {
            CPipeWire_pw_loop_destroy_source(pw_thread_loop_get_loop(graph.threadLoop), retryTimer)
            self.retryTimer = nil
        }
        destroyStreamLocked()
        if let drainEvent {
            CPipeWire_pw_loop_destroy_source(pw_thread_loop_get_loop(graph.threadLoop), drainEvent)
            self.drainEvent = nil
        }
        pw_thread_loop_unlock(graph.threadLoop)
        graph.close()
    }

    private func close() {
        stop()
    }

    // MARK: Loop-thread callbacks

    fileprivate func stateChanged(_ state: pw_stream_state, error: String?) {
        if state == PW_STREAM_STATE_ERROR {
            streamError = error ?? "the stream went into the error state"
            graph.signal()
            // WirePlumber destroys a node.dont-reconnect stream whose target it cannot find yet
            // (a node that has just appeared): try again while the target exists.
            if targetName != nil && targetNodeID != nil { retryLater() }
        }
    }

    private func retryLater() {
        guard !stopped, let retryTimer else { return }
        _ = CPipeWire_pw_loop_arm_timer_ms(pw_thread_loop_get_loop(graph.threadLoop), retryTimer, Self.retryDelayMs)
    }

    /// The retry timer fired: a new stream to the target, if it is still there.
    fileprivate func retry() {
        guard !stopped, targetNodeID != nil else { return }
        destroyStreamLocked()
        pending.removeAll(keepingCapacity: true)
        timeline.reset()
        do {
            try connectStreamLocked()
        } catch {
            retryLater()
        }
    }

    fileprivate func paramChanged(id: UInt32, param: UnsafePointer<spa_pod>?) {
        guard id == CPipeWire_SPA_PARAM_Format(), let param else { return }
        var rate: UInt32 = 0, channelCount: UInt32 = 0, format: UInt32 = 0
        guard CPipeWire_parse_audio_format(param, &rate, &channelCount, &format) == 0, rate > 0, channelCount > 0,
              format == CPipeWire_SPA_AUDIO_FORMAT_F32()
        else {
            streamError = "PipeWire negotiated a format other than interleaved F32"
            graph.signal()
            return
        }
        channels = Int(channelCount)
        negotiatedChannels.store(Int(channelCount), ordering: .relaxed)
        chunkFrames = max(1, Int(rate) * settings.chunkMs / 1000)
        if Int(rate) != negotiatedRateHz.load(ordering: .relaxed) || pending.capacity < chunkFrames * channels {
            pending = []
            pending.reserveCapacity(chunkFrames * channels)
        }
        pending.removeAll(keepingCapacity: true)
        timeline.reset()
        negotiatedRateHz.store(Int(rate), ordering: .relaxed)
        graph.signal()
    }

    /// On the data loop (real time): every waiting buffer copied into `handoff` with the time of
    /// its first sample, then the thread loop woken. No lock, no allocation, no call out.
    fileprivate func processRealtime() {
        guard let stream = OpaquePointer(bitPattern: realtimeStream.load(ordering: .acquiring)) else { return }
        let rate = negotiatedRateHz.load(ordering: .relaxed)
        let channels = negotiatedChannels.load(ordering: .relaxed)
        let generation = streamGeneration.load(ordering: .relaxed)
        var copied = false
        while let buffer = pw_stream_dequeue_buffer(stream) {
            defer { pw_stream_queue_buffer(stream, buffer) }
            guard rate > 0, channels > 0, let spaBuffer = buffer.pointee.buffer, spaBuffer.pointee.n_datas > 0,
                  let datas = spaBuffer.pointee.datas
            else { continue }
            let data = datas[0]
            guard let base = data.data, let chunk = data.chunk else { continue }
            let offset = Int(min(chunk.pointee.offset, data.maxsize))
            let size = Int(min(chunk.pointee.size, data.maxsize - UInt32(offset)))
            let frames = size / (MemoryLayout<Float>.size * channels)
            guard frames > 0 else { continue }
            var time = pw_time()
            let capturedNs = Self.firstSamplePtsNs(stream: stream, time: &time, frames: frames, rate: rate)
            let values = UnsafeBufferPointer(start: (base + offset).assumingMemoryBound(to: Float.self),
                                             count: frames * channels)
            copied = handoff.write(values, capturedNs: capturedNs, rateHz: rate, channels: channels,
                                   generation: generation) || copied
        }
        if copied, let drainEvent {
            _ = CPipeWire_pw_loop_signal_event(pw_thread_loop_get_loop(graph.threadLoop), drainEvent)
        }
    }

    /// On the thread loop: the buffers the data loop copied, re-chunked on the timeline. A buffer
    /// of an earlier stream or format is left out.
    fileprivate func drain() {
        let rate = negotiatedRateHz.load(ordering: .relaxed)
        let generation = streamGeneration.load(ordering: .relaxed)
        handoff.drain { record, values in
            guard !stopped, record.generation == generation, record.rateHz == rate, record.channels == channels,
                  rate > 0
            else { return }
            deliver(values, capturedNs: record.capturedNs, rate: rate)
        }
    }

    private func deliver(_ samples: UnsafeBufferPointer<Float>, capturedNs: UInt64, rate: Int) {
        let chunkNs = Self.durationNs(frames: UInt64(chunkFrames), rate: rate)
        let resyncThresholdNs = max(chunkNs, 30_000_000)
        if timeline.observe(measuredNs: capturedNs, pendingFrames: UInt64(pending.count / channels), rateHz: rate,
                            thresholdNs: resyncThresholdNs) {
            pending.removeAll(keepingCapacity: true)
        }
        let chunkSamples = chunkFrames * channels
        var index = 0
        while index < samples.count {
            let take = min(chunkSamples - pending.count, samples.count - index)
            pending.append(contentsOf: samples[index..<(index + take)])
            index += take
            if pending.count == chunkSamples {
                let ptsNs = timeline.deliver(frames: chunkFrames, rateHz: rate)
                // The chunk takes `pending`'s buffer and gives it back after `onChunk`: when the
                // receiver kept no copy, the next chunk fills the same memory (no array per chunk).
                var delivered = PCMChunk(samples: [], sampleRate: rate, channels: channels, ptsNs: ptsNs)
                swap(&delivered.samples, &pending)
                onChunk(delivered)
                swap(&delivered.samples, &pending)
                pending.removeAll(keepingCapacity: true)
                chunksDelivered.add(1, ordering: .relaxed)
                if !sentFirstChunk {
                    sentFirstChunk = true
                    onEvent(.firstChunk)
                }
            }
        }
    }

    /// `now - delay - buffered - (waiting buffers + 1) x frames/rate` from the stream's time report; the current
    /// CLOCK_MONOTONIC time minus the buffer's duration when PipeWire has no report yet.
    private static func firstSamplePtsNs(stream: OpaquePointer, time: inout pw_time, frames: Int, rate: Int) -> UInt64 {
        let bufferNs = durationNs(frames: UInt64(frames), rate: rate)
        let nowNs = MonotonicClock.nowNs()
        guard pw_stream_get_time_n(stream, &time, MemoryLayout<pw_time>.size) == 0, time.now > 0 else {
            return nowNs - min(nowNs, bufferNs)
        }
        var delayNs: Int64 = 0
        if time.rate.denom > 0 && time.delay > 0 {
            delayNs = time.delay * 1_000_000_000 * Int64(time.rate.num) / Int64(time.rate.denom)
        }
        let bufferedNs = Int64(durationNs(frames: time.buffered, rate: rate))
        // Buffers still waiting behind this one (a late callback) were captured after it.
        let newerNs = Int64(time.avail_buffers) * Int64(bufferNs)
        let ptsNs = time.now - delayNs - bufferedNs - newerNs - Int64(bufferNs)
        // A report from the future or absurdly old (> 1 s) is not trusted.
        if ptsNs <= 0 || UInt64(ptsNs) > nowNs || nowNs - UInt64(ptsNs) > 1_000_000_000 {
            return nowNs - min(nowNs, bufferNs)
        }
        return UInt64(ptsNs)
    }

    private static func durationNs(frames: UInt64, rate: Int) -> UInt64 {
        frames * 1_000_000_000 / UInt64(rate)
    }

    fileprivate func nodeRemoved(_ node: PipeWireNode) {
        guard !stopped, let targetName, node.id == targetNodeID else { return }
        targetNodeID = nil
        destroyStreamLocked()
        pending.removeAll(keepingCapacity: true)
        timeline.reset()
        onEvent(.sourceLost(targetName))
    }

    fileprivate func daemonLost(_ message: String) {
        guard !stopped else { return }
        stopped = true  // nothing more from this connection; the retry timer must not run
        onEvent(.daemonLost(message))
    }

    fileprivate func nodeAdded(_ node: PipeWireNode) {
        guard !stopped, let targetName, targetNodeID == nil, node.name == targetName, node.kind == targetKind else {
            return
        }
        targetNodeID = node.id
        do {
            try connectStreamLocked()
            onEvent(.sourceReturned(targetName))
        } catch {
            // Stays lost; the next node of that name tries again.
            targetNodeID = nil
        }
    }
}

private func captureSession(_ data: UnsafeMutableRawPointer?) -> CaptureSession {
    Unmanaged<CaptureSession>.fromOpaque(data!).takeUnretainedValue()
}

private func captureStateChanged(
    _ data: UnsafeMutableRawPointer?, _ old: pw_stream_state, _ state: pw_stream_state, _ error: UnsafePointer<CChar>?
) {
    captureSession(data).stateChanged(state, error: error.map { String(cString: $0) })
}

private func captureParamChanged(_ data: UnsafeMutableRawPointer?, _ id: UInt32, _ param: UnsafePointer<spa_pod>?) {
    captureSession(data).paramChanged(id: id, param: param)
}

/// On the data loop (PW_STREAM_FLAG_RT_PROCESS).
private func captureProcess(_ data: UnsafeMutableRawPointer?) {
    captureSession(data).processRealtime()
}

private func captureDrain(_ data: UnsafeMutableRawPointer?, _ count: UInt64) {
    captureSession(data).drain()
}

private func captureRetryTimer(_ data: UnsafeMutableRawPointer?, _ expirations: UInt64) {
    captureSession(data).retry()
}
