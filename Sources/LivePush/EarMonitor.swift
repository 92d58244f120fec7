import AudioCapture
import Media

/// Why ear monitoring could not start, in words that say how to fix it.
struct EarMonitorProblem: Error, CustomStringConvertible {
    let description: String
}

/// Ear monitoring: the microphone, straight from its capture (not through the mixer's 70 ms),
/// and the background music, played to a PipeWire sink (AudioCapture's `PipeWirePlayback`).
final class EarMonitor: @unchecked Sendable {
    private let playback: PipeWirePlayback

    private init(playback: PipeWirePlayback) { self.playback = playback }

    /// Opens the playback stream to `sink` (nil: the default one) and taps the pipeline's
    /// microphone samples and music frames.
    static func open(sink: String?, pipeline: AudioPipeline) -> Result<EarMonitor, EarMonitorProblem> {
        let rate = pipeline.settings.sampleRateHz, channels = pipeline.settings.channels
        let playback: PipeWirePlayback
        do {
            playback = try PipeWirePlayback(sink: sink, rateHz: rate, channels: channels)
        } catch {
            return .failure(EarMonitorProblem(description: error.description))
        }
        // The microphone arrives at the graph's rate with the pipeline's channels; the mixer's
        // resampler is not on this path, so other rates are converted here.
        let converter = MicrophoneConverter(outputRateHz: rate, outputChannels: channels)
        pipeline.onMicrophoneSamples = { samples, rateHz, sampleChannels, ptsNs in
            playback.write(converter.convert(samples, rateHz: rateHz, channels: sampleChannels), ptsNs: ptsNs)
        }
        pipeline.onMusicFrame = { samples in playback.mix(samples) }
        return .success(EarMonitor(playback: playback))
    }

    /// Capture-to-sink latency of the microphone, in ms, once measured.
    var latencyMs: Int? { playback.latencyMs }

    func stop() { playback.stop() }
}

/// The microphone's samples in the playback stream's format (libswresample when they differ).
private final class MicrophoneConverter: @unchecked Sendable {
    private let outputRateHz: Int
    private let outputChannels: Int
    private var resampler: AudioResampler?

    init(outputRateHz: Int, outputChannels: Int) {
        self.outputRateHz = outputRateHz
        self.outputChannels = outputChannels
    }

    func convert(_ samples: [Float], rateHz: Int, channels: Int) -> [Float] {
        if rateHz == outputRateHz && channels == outputChannels { return samples }
        if resampler?.inputRateHz != rateHz || resampler?.inputChannels != channels {
            resampler = try? AudioResampler(inputRateHz: rateHz, inputChannels: channels, outputRateHz: outputRateHz,
                                            outputChannels: outputChannels)
        }
        return (try? resampler?.convert(samples)) ?? []
    }
}
