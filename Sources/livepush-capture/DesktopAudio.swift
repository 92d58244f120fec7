import AudioCapture
import CaptureLink
import LinuxSystem
import Synchronization

/// `--desktop-audio`: what plays on the default sink (its monitor), captured through PipeWire and
/// sent to the pusher as AUDIO messages (F32LE, interleaved stereo, 20 ms each, `pts_ns` on
/// CLOCK_MONOTONIC) while a session is capturing (SPEC §5.4, §10, §12).
///
/// The PipeWire capture starts before the first HELLO, so that HELLO offers AUDIO only when
/// there is audio to send: without PipeWire the helper warns and goes on with video only.
/// Chunks arrive on PipeWire's thread and wait in a bounded queue (1 s; the oldest go first
/// when the capture loop falls behind); the capture loop, the only user of the endpoint,
/// sends them. Chunks captured outside a session's CAPTURING state are dropped.
final class DesktopAudio {
    /// At most 1 s of 20 ms chunks waits for the capture loop.
    static let maxQueuedChunks = 50
    static let chunkMs = 20
    /// How often the capture loop wakes to send audio between frames, in ns.
    static let forwardIntervalNs: UInt64 = 10_000_000

    private let queue = ChunkQueue()
    private let capture: PipeWireAudioCapture
    private(set) var chunksSent: UInt64 = 0

    /// Starts capturing the default sink's monitor; nil (after a warning) when PipeWire or a sink is missing.
    static func start() -> DesktopAudio? {
        do {
            return try DesktopAudio()
        } catch {
            CaptureLoop.warn("no desktop audio, video only: \(error)")
            return nil
        }
    }

    private init() throws(AudioCaptureError) {
        var settings = AudioCaptureSettings()
        settings.captureSinkMonitor = true
        settings.channels = 2
        settings.chunkMs = Self.chunkMs
        let queue = self.queue
        capture = try PipeWireAudioCapture(settings: settings, onChunk: { queue.push($0) }, onEvent: { event in
            switch event {
            case .firstChunk: break
            case .sourceLost(let name): CaptureLoop.warn("desktop audio: sink '\(name)' went away; waiting for it")
            case .sourceReturned(let name): CaptureLoop.note("desktop audio: sink '\(name)' is back")
            case .daemonLost(let message): CaptureLoop.warn("desktop audio: PipeWire went away (\(message)); video only")
            }
        })
        CaptureLoop.note("desktop audio from the monitor of '\(capture.sourceName ?? "the default sink")' "
            + "at \(capture.sampleRate) Hz")
    }

    deinit {
        capture.stop()
    }

    /// Offers AUDIO (F32LE) in HELLO.
    func announce(_ configuration: inout HelperEndpointConfiguration) {
        configuration.capabilities.insert(.audio)
        configuration.audioFormats = [.f32le]
    }

    /// After START: forwards from now on if the pusher granted AUDIO; says so if it did not.
    func sessionStarted(_ endpoint: HelperEndpoint) {
        guard endpoint.welcome.capabilities.contains(.audio) else {
            CaptureLoop.warn("the pusher did not accept audio; desktop audio is not sent")
            return
        }
        queue.setAccepting(true)
    }

    /// At the end of a session: nothing is queued for the next one.
    func sessionEnded() {
        queue.setAccepting(false)
    }

    /// `--on-lock mute` while the screen is locked: captured sound is dropped, not sent. Set and read
    /// on the capture loop's thread only (ScreenLockGuard's owner, which also calls `forward`).
    var withheld = false

    /// Sends every queued chunk as AUDIO (or drops it while `withheld`).
    func forward(to endpoint: HelperEndpoint) throws(HelperLinkError) {
        for chunk in queue.drain() where !withheld {
            let pcm = chunk.samples.withUnsafeBytes { Array($0) }  // F32 in memory is F32LE on our targets
            try endpoint.sendAudio(Audio(format: .f32le, rateHz: UInt32(chunk.sampleRate),
                                         channels: UInt16(chunk.channels), ptsNs: chunk.ptsNs, pcm: pcm))
            chunksSent += 1
        }
    }

    /// Sleeps until `deadlineNs` (CLOCK_MONOTONIC) like `MonotonicClock.sleep`, waking every
    /// `forwardIntervalNs` to send the audio captured meanwhile; false if `shouldStop` said so.
    func sleep(untilNs deadlineNs: UInt64, forwardingTo endpoint: HelperEndpoint, shouldStop: () -> Bool)
        throws(HelperLinkError) -> Bool
    {
        while true {
            try forward(to: endpoint)
            let nowNs = MonotonicClock.nowNs()
            if nowNs >= deadlineNs { return true }
            guard MonotonicClock.sleep(untilNs: min(deadlineNs, nowNs + Self.forwardIntervalNs), shouldStop: shouldStop),
                  !shouldStop()
            else { return false }
        }
    }

    var droppedChunks: Int { queue.dropped }
}

/// Chunks handed from PipeWire's thread to the capture loop.
private final class ChunkQueue: Sendable {
    private struct State {
        var chunks: [PCMChunk] = []
        var accepting = false
        var dropped = 0
    }

    private let state = Mutex(State())

    func push(_ chunk: PCMChunk) {
        state.withLock { state in
            guard state.accepting else { return }
            if state.chunks.count >= DesktopAudio.maxQueuedChunks {
                state.chunks.removeFirst()
                state.dropped += 1
            }
            state.chunks.append(chunk)
        }
    }

    func drain() -> [PCMChunk] {
        state.withLock { state in
            defer { state.chunks.removeAll(keepingCapacity: true) }
            return state.chunks
        }
    }

    func setAccepting(_ accepting: Bool) {
        state.withLock { state in
            state.accepting = accepting
            state.chunks.removeAll(keepingCapacity: true)
        }
    }

    var dropped: Int { state.withLock { $0.dropped } }
}
