import AudioCapture

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
/// microphone source, with its capture timestamps.
final class Microphone: @unchecked Sendable {
    private let capture: PipeWireAudioCapture

    private init(capture: PipeWireAudioCapture) { self.capture = capture }

    /// Opens the source `name` (a node name) or the default one.
    static func open(name: String?, pipeline: AudioPipeline, onEvent: @escaping @Sendable (MicrophoneEvent) -> Void)
        -> Result<Microphone, MicrophoneProblem>
    {
        var settings = AudioCaptureSettings()
        settings.target = name
        settings.channels = pipeline.settings.channels
        // At the graph's own rate: the mixer resamples (libswresample) with everything else.
        do {
            let capture = try PipeWireAudioCapture(settings: settings, onChunk: { [weak pipeline] chunk in
                pipeline?.push(chunk.samples, rateHz: chunk.sampleRate, channels: chunk.channels, ptsNs: chunk.ptsNs,
                               from: .microphone)
            }, onEvent: { event in
                switch event {
                case .sourceLost(let source): onEvent(.lost(source))
                case .sourceReturned(let source): onEvent(.returned(source))
                case .firstChunk: break
                }
            })
            return .success(Microphone(capture: capture))
        } catch {
            return .failure(MicrophoneProblem(description: error.description))
        }
    }

    func stop() { capture.stop() }
}
