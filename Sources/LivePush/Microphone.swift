import AudioCapture
import Dispatch
import Foundation
import Synchronization

/// What the microphone reports besides samples.
enum MicrophoneEvent: Sendable {
    case lost(String)
    case returned(String)
}

/// Why the microphone could not be opened, in words that say how to fix it.
struct MicrophoneProblem: Error, CustomStringConvertible {
    let description: String
}

/// The microphone, captured through PipeWire (AudioCapture) into the audio pipeline's
/// microphone source, with its capture timestamps. When the PipeWire daemon goes away (it
/// stopped or restarted), the microphone is reported lost and opened again every
/// `reopenIntervalMs` until the daemon and the source are back, then reported returned.
final class Microphone: @unchecked Sendable {
    private let settings: AudioCaptureSettings
    private weak var pipeline: AudioPipeline?
    private let onEvent: @Sendable (MicrophoneEvent) -> Void
    /// The capture open now and whether `stop` was called: taken by `open`, `stop` (the pusher's
    /// calls, in turn) and `reopenUntilBack` (a global queue), for a few instructions.
    private let state = Mutex((capture: PipeWireAudioCapture?.none, stopped: false))
    static let reopenIntervalMs = 500

    private init(settings: AudioCaptureSettings, pipeline: AudioPipeline,
                 onEvent: @escaping @Sendable (MicrophoneEvent) -> Void) {
        self.settings = settings
        self.pipeline = pipeline
        self.onEvent = onEvent
    }

    /// The name events carry: the node name, or "the default source".
    private var sourceName: String { settings.target ?? "the default source" }

    /// Opens the source `name` (a node name) or the default one.
    static func open(name: String?, pipeline: AudioPipeline, onEvent: @escaping @Sendable (MicrophoneEvent) -> Void)
        -> Result<Microphone, MicrophoneProblem>
    {
        var settings = AudioCaptureSettings()
        settings.target = name
        settings.channels = pipeline.settings.channels
        // 10 ms chunks: ear monitoring plays them as they come (the mixer takes any size).
        settings.chunkMs = 10
        // At the graph's own rate: the mixer resamples (libswresample) with everything else.
        let microphone = Microphone(settings: settings, pipeline: pipeline, onEvent: onEvent)
        do {
            let capture = try microphone.openCapture()
            microphone.state.withLock { $0.capture = capture }
            return .success(microphone)
        } catch {
            return .failure(MicrophoneProblem(description: error.description))
        }
    }

    private func openCapture() throws(AudioCaptureError) -> PipeWireAudioCapture {
        try PipeWireAudioCapture(settings: settings, onChunk: { [weak pipeline] chunk in
            pipeline?.push(chunk.samples, rateHz: chunk.sampleRate, channels: chunk.channels, ptsNs: chunk.ptsNs,
                           from: .microphone)
        }, onEvent: { [weak self] event in
            guard let self else { return }
            switch event {
            case .sourceLost(let source): onEvent(.lost(source))
            case .sourceReturned(let source): onEvent(.returned(source))
            case .daemonLost:
                onEvent(.lost(sourceName))
                // Not on PipeWire's thread: stopping the dead capture joins it.
                DispatchQueue.global().async { self.reopenUntilBack() }
            case .firstChunk: break
            }
        })
    }

    /// Closes the dead capture and opens a new one until it works (or `stop`).
    private func reopenUntilBack() {
        let dead = state.withLock { state -> PipeWireAudioCapture? in
            defer { state.capture = nil }
            return state.capture
        }
        dead?.stop()
        while !state.withLock({ $0.stopped }) {
            if let capture = try? openCapture() {
                let keep = state.withLock { state -> Bool in
                    if state.stopped { return false }
                    state.capture = capture
                    return true
                }
                if keep { onEvent(.returned(sourceName)) } else { capture.stop() }
                return
            }
            Thread.sleep(forTimeInterval: Double(Self.reopenIntervalMs) / 1000)
        }
    }

    func stop() {
        let capture = state.withLock { state -> PipeWireAudioCapture? in
            state.stopped = true
            defer { state.capture = nil }
            return state.capture
        }
        capture?.stop()
    }
}
