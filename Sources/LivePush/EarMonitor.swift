import AudioCapture

/// Why ear monitoring could not start, in words that say how to fix it.
struct EarMonitorProblem: Error, CustomStringConvertible {
    let description: String
}

/// Ear monitoring: the microphone (straight from its capture, not through the mixer's delay)
/// and the background music played to a PipeWire sink.
final class EarMonitor: @unchecked Sendable {
    static func open(sink: String?, pipeline: AudioPipeline) -> Result<EarMonitor, EarMonitorProblem> {
        .failure(EarMonitorProblem(description: "not built yet"))
    }

    func stop() {}
}
extension EarMonitor {
    var latencyMs: Int? { nil }
}
