import CPipeWire
import LinuxSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Plays interleaved float PCM to a PipeWire sink through a playback stream (ear monitoring):
/// a voice (the microphone, with its capture timestamps) and, added to it, a bed (the music).
///
/// **Latency.** The stream asks for a small quantum (`node.latency` 256/rate) and holds at
/// most `maxQueuedMs` of voice: older samples are dropped, so the voice never falls behind.
/// The voice arrives in the capture's chunks (10 ms from the pusher's microphone); after running dry it waits until
/// `prefillMs` are queued, so a chunk a little late does not leave a hole.
/// For each buffer it fills, the first voice sample's capture time and the time PipeWire says
/// that buffer will be heard (`pw_time.now` plus the delay to the device) give the latency
/// from capture to the sink (`latencyMs`, the mean of the last second's buffers).
///
/// **Threads.** `write` and `mix` from any thread; `process` on PipeWire's thread loop.
public final class PipeWirePlayback: @unchecked Sendable {
    private let session: PlaybackSession

    /// Connects to PipeWire and a playback stream to the sink named `sink` (a node name) or the
    /// default one; waits (up to 3 s) for it to run.
    public init(sink: String?, rateHz: Int, channels: Int, remote: String? = nil) throws(AudioCaptureError) {
        guard (1...8).contains(channels), (8000...192_000).contains(rateHz) else {
            throw .streamFailed("playback of \(channels) channels at \(rateHz) Hz asked; use 1 to 8 channels, 8000 to 192000 Hz")
        }
        session = try PlaybackSession(sink: sink, rateHz: rateHz, channels: channels, remote: remote)
    }

    deinit { session.stop() }

    /// Queues voice samples captured at `ptsNs` (CLOCK_MONOTONIC) for playback.
    public func write(_ samples: [Float], ptsNs: UInt64) { session.queue.withLock { $0.appendVoice(samples, ptsNs: ptsNs) } }

    /// Adds `samples` (music) to what plays next, beside the voice.
    public func mix(_ samples: [Float]) { session.queue.withLock { $0.appendBed(samples) } }

    /// Capture-to-sink latency of the voice, in ms, over the last second; nil before it is known.
    public var latencyMs: Int? {
        let value = session.latencyUs.load(ordering: .relaxed)
        return value < 0 ? nil : (value + 500) / 1000
    }

    /// Disconnects and frees everything. Idempotent.
    public func stop() { session.stop() }
}

/// What waits to be played, in the stream's format.
struct PlaybackQueue {
    let channels: Int
    let rateHz: Int
    let maxQueuedMs = 60
    let prefillMs = 15
    var voice: [Float] = []
    var priming = true
    var voiceHeadPtsNs: UInt64 = 0
    var bed: [Float] = []

    mutating func appendVoice(_ samples: [Float], ptsNs: UInt64) {
        if voice.isEmpty { voiceHeadPtsNs = ptsNs }
        voice += samples
        let maxValues = maxQueuedMs * rateHz / 1000 * channels
        if voice.count > maxValues {
            let drop = (voice.count - maxValues) / channels
            voice.removeFirst(drop * channels)
            voiceHeadPtsNs += UInt64(drop) * 1_000_000_000 / UInt64(rateHz)
        }
    }

    mutating func appendBed(_ samples: [Float]) {
        bed += samples
        let maxValues = 200 * rateHz / 1000 * channels
        if bed.count > maxValues { bed.removeFirst(bed.count - maxValues) }
    }

    /// Fills `output` (frames x channels); returns the capture time of its first voice sample, if any.
    mutating func take(into output: UnsafeMutableBufferPointer<Float>) -> UInt64? {
        let count = output.count
        if priming && voice.count >= prefillMs * rateHz / 1000 * channels { priming = false }
        let voiceCount = priming ? 0 : min(count, voice.count), bedCount = min(count, bed.count)
        if !priming && voiceCount < count { priming = true }  // ran dry: fill up again before playing
        let head = voiceCount > 0 ? voiceHeadPtsNs : nil
        for index in 0..<count {
            output[index] = (index < voiceCount ? voice[index] : 0) + (index < bedCount ? bed[index] : 0)
        }
        voice.removeFirst(voiceCount)
        bed.removeFirst(bedCount)
        voiceHeadPtsNs += UInt64(voiceCount / channels) * 1_000_000_000 / UInt64(rateHz)
        return head
    }
}

private final class PlaybackSession: @unchecked Sendable {
    let graph: PipeWireGraph
    let rateHz: Int
    let channels: Int
    let queue: Mutex<PlaybackQueue>
    let latencyUs = Atomic<Int>(-1)
    private var stream: OpaquePointer?
    private let streamListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let streamEvents = UnsafeMutablePointer<pw_stream_events>.allocate(capacity: 1)
    private var state = PW_STREAM_STATE_UNCONNECTED
    private var streamError: String?
    private var latencySumUs = 0, latencyCount = 0, latencyWindowStartNs: UInt64 = 0
    private let stopRequested = Atomic<Bool>(false)

    init(sink: String?, rateHz: Int, channels: Int, remote: String?) throws(AudioCaptureError) {
        self.rateHz = rateHz
        self.channels = channels
        queue = Mutex(PlaybackQueue(channels: channels, rateHz: rateHz))
        streamListener.initialize(to: spa_hook())
        streamEvents.initialize(to: pw_stream_events())
        graph = try PipeWireGraph(name: "livepush-ear", remote: remote)
        do throws(AudioCaptureError) {
            try start(sink: sink)
        } catch {
            stop()
            throw error
        }
    }

    deinit {
        streamListener.deallocate()
        streamEvents.deallocate()
    }

    private func start(sink: String?) throws(AudioCaptureError) {
        pw_thread_loop_lock(graph.threadLoop)
        defer { pw_thread_loop_unlock(graph.threadLoop) }
        if let sink, !graph.nodes.values.contains(where: { $0.kind == .sink && $0.name == sink }) {
            let sinks = graph.nodes.values.filter { $0.kind == .sink }.map(\.name).sorted()
            throw .streamFailed("no sink named '\(sink)' to play to; available: "
                + (sinks.isEmpty ? "none" : sinks.joined(separator: ", ")) + " (see `livepush devices`)")
        }
        guard let core = graph.core else { throw .streamFailed("not connected to PipeWire") }
        let properties = CPipeWire_pw_properties_new_empty()
        pw_properties_set(properties, PW_KEY_MEDIA_TYPE, "Audio")
        pw_properties_set(properties, PW_KEY_MEDIA_CATEGORY, "Playback")
        pw_properties_set(properties, PW_KEY_MEDIA_ROLE, "Communication")
        pw_properties_set(properties, PW_KEY_APP_NAME, "LivePush")
        pw_properties_set(properties, PW_KEY_NODE_NAME, "livepush-ear-monitor")
        pw_properties_set(properties, PW_KEY_NODE_LATENCY, "256/\(rateHz)")
        if let sink {
            pw_properties_set(properties, PW_KEY_TARGET_OBJECT, sink)
            pw_properties_set(properties, PW_KEY_NODE_DONT_RECONNECT, "true")
        }
        guard let stream = pw_stream_new(core, "livepush-ear-monitor", properties) else {
            throw .streamFailed("pw_stream_new failed (errno \(errno))")
        }
        self.stream = stream
        streamEvents.pointee.version = UInt32(PW_VERSION_STREAM_EVENTS)
        streamEvents.pointee.state_changed = playbackStateChanged
        streamEvents.pointee.process = playbackProcess
        pw_stream_add_listener(stream, streamListener, streamEvents, Unmanaged.passUnretained(self).toOpaque())
        var podBytes = [UInt8](repeating: 0, count: 1024)
        let result = podBytes.withUnsafeMutableBufferPointer { bytes -> Int32 in
            guard let format = CPipeWire_build_f32_audio_format(bytes.baseAddress, UInt32(bytes.count), UInt32(rateHz),
                                                                 UInt32(channels))
            else { return -ENOSPC }
            return CPipeWire_pw_stream_connect_playback(stream, format)
        }
        if result < 0 { throw .streamFailed("pw_stream_connect (playback) failed: \(String(cString: strerror(-result)))") }
        let deadlineMs = MonotonicClock.nowMs() + 3000
        while state != PW_STREAM_STATE_STREAMING && state != PW_STREAM_STATE_PAUSED && streamError == nil {
            let remainingMs = deadlineMs - MonotonicClock.nowMs()
            if remainingMs <= 0 {
                throw .streamFailed("the playback stream to '\(sink ?? "the default sink")' did not start within 3 s; "
                    + "is a session manager (wireplumber) running to link it?")
            }
            graph.waitLocked(timeoutMs: remainingMs)
        }
        if let streamError { throw .streamFailed("the playback stream failed: \(streamError)") }
    }

    func stop() {
        guard !stopRequested.exchange(true, ordering: .sequentiallyConsistent) else { return }
        pw_thread_loop_lock(graph.threadLoop)
        if let stream {
            spa_hook_remove(streamListener)
            pw_stream_destroy(stream)
            self.stream = nil
        }
        pw_thread_loop_unlock(graph.threadLoop)
        graph.close()
    }

    fileprivate func stateChanged(_ state: pw_stream_state, error: String?) {
        self.state = state
        if state == PW_STREAM_STATE_ERROR { streamError = error ?? "the stream went into the error state" }
        graph.signal()
    }

    fileprivate func process() {
        guard let stream, let buffer = pw_stream_dequeue_buffer(stream) else { return }
        defer { pw_stream_queue_buffer(stream, buffer) }
        guard let spaBuffer = buffer.pointee.buffer, spaBuffer.pointee.n_datas > 0, let datas = spaBuffer.pointee.datas,
              let base = datas[0].data, let chunk = datas[0].chunk
        else { return }
        let frameBytes = MemoryLayout<Float>.size * channels
        var frames = Int(datas[0].maxsize) / frameBytes
        if buffer.pointee.requested > 0 { frames = min(frames, Int(buffer.pointee.requested)) }
        let output = UnsafeMutableBufferPointer(start: base.assumingMemoryBound(to: Float.self), count: frames * channels)
        let headPtsNs = queue.withLock { $0.take(into: output) }
        chunk.pointee.offset = 0
        chunk.pointee.stride = Int32(frameBytes)
        chunk.pointee.size = UInt32(frames * frameBytes)
        guard let headPtsNs else { return }
        // When this buffer is heard: the graph cycle's time plus the delay to the device.
        var time = pw_time()
        let nowNs = MonotonicClock.nowNs()
        var playNs = Int64(nowNs)
        if pw_stream_get_time_n(stream, &time, MemoryLayout<pw_time>.size) == 0, time.now > 0, time.rate.denom > 0 {
            let delayNs = time.delay * 1_000_000_000 * Int64(time.rate.num) / Int64(time.rate.denom)
            let queuedNs = Int64(time.queued) * 1_000_000_000 / Int64(rateHz * frameBytes)
            playNs = max(Int64(nowNs), time.now) + max(0, delayNs) + queuedNs
        }
        latencySumUs += Int(max(0, playNs - Int64(headPtsNs)) / 1000)
        latencyCount += 1
        if nowNs - latencyWindowStartNs >= 1_000_000_000 {
            latencyUs.store(latencySumUs / latencyCount, ordering: .relaxed)
            latencySumUs = 0
            latencyCount = 0
            latencyWindowStartNs = nowNs
        }
    }
}

private func playbackSession(_ data: UnsafeMutableRawPointer?) -> PlaybackSession {
    Unmanaged<PlaybackSession>.fromOpaque(data!).takeUnretainedValue()
}

private func playbackStateChanged(
    _ data: UnsafeMutableRawPointer?, _ old: pw_stream_state, _ state: pw_stream_state, _ error: UnsafePointer<CChar>?
) {
    playbackSession(data).stateChanged(state, error: error.map { String(cString: $0) })
}

private func playbackProcess(_ data: UnsafeMutableRawPointer?) {
    playbackSession(data).process()
}
