// Placeholder until the AudioCapture module's PipeWire capture lands (branch audio-capture).

/// What the microphone reports besides samples.
enum MicrophoneEvent: Sendable {
    case lost(String)
    case returned(String)
}

struct MicrophoneProblem: Error, CustomStringConvertible {
    let description: String
}

/// The microphone, captured through PipeWire into the audio pipeline's microphone source.
final class Microphone: @unchecked Sendable {
    static func open(name: String?, pipeline: AudioPipeline, onEvent: @escaping @Sendable (MicrophoneEvent) -> Void)
        -> Result<Microphone, MicrophoneProblem>
    {
        .failure(MicrophoneProblem(description: "microphone capture is not built in yet"))
    }

    func stop() {}
}
