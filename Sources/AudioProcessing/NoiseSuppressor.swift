import CSpeexDSP

/// How hard noise suppression works: how far down (dB) speexdsp's preprocessor may pull what
/// it takes for noise. Stationary noise (hiss, fans) is what it removes; a voice, which starts
/// and stops, stays.
public enum NoiseSuppressionLevel: String, Sendable, CaseIterable {
    case off, low, medium, high

    /// The most it attenuates noise, in dB (negative), as speexdsp's NOISE_SUPPRESS takes it.
    public var maxAttenuationDb: Int32 {
        switch self {
        case .off: 0
        case .low: -15
        case .medium: -25
        case .high: -40
        }
    }
}

/// Noise suppression (and optional automatic gain) on interleaved float frames of a fixed
/// size, through speexdsp's preprocessor: one state per channel, on 16-bit samples as speexdsp
/// wants them. Used from one thread at a time.
public final class NoiseSuppressor {
    public let frameSamples: Int
    public let channels: Int
    public let sampleRateHz: Int
    private var states: [OpaquePointer] = []
    private var scratch: [Int16]

    /// `frameSamples` sample frames per call (20 ms: `sampleRateHz / 50`).
    public init(frameSamples: Int, sampleRateHz: Int, channels: Int, level: NoiseSuppressionLevel,
                automaticGain: Bool) {
        self.frameSamples = frameSamples
        self.channels = channels
        self.sampleRateHz = sampleRateHz
        scratch = [Int16](repeating: 0, count: frameSamples)
        for _ in 0..<channels {
            if let state = speex_preprocess_state_init(Int32(frameSamples), Int32(sampleRateHz)) { states.append(state) }
        }
        configure(level: level, automaticGain: automaticGain)
    }

    deinit { for state in states { speex_preprocess_state_destroy(state) } }

    public func configure(level: NoiseSuppressionLevel, automaticGain: Bool) {
        for state in states {
            var denoise: Int32 = level == .off ? 0 : 1
            var attenuation = level == .off ? -15 : level.maxAttenuationDb
            var agc: Int32 = automaticGain ? 1 : 0
            var agcLevel: Float = 8000  // about -12 dBFS: speech level speexdsp aims for
            _ = speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DENOISE, &denoise)
            _ = speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &attenuation)
            _ = speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_AGC, &agc)
            if automaticGain { _ = speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_AGC_LEVEL, &agcLevel) }
        }
    }

    /// The broadband gain of the last frame processed (its output's energy over its input's, as an
    /// amplitude ratio), which `applyLastGain` gives a frame the preprocessor must not see.
    private var lastGain: Float = 1

    /// Processes one frame in place: `frameSamples * channels` interleaved samples, −1...1.
    public func process(_ samples: inout [Float]) {
        guard samples.count == frameSamples * channels, states.count == channels else { return }
        var inputEnergy = 0.0, outputEnergy = 0.0
        for channel in 0..<channels {
            for index in 0..<frameSamples {
                let value = samples[index * channels + channel] * 32767
                scratch[index] = Int16(max(-32768, min(32767, value.rounded())))
                inputEnergy += Double(value) * Double(value)
            }
            scratch.withUnsafeMutableBufferPointer { _ = speex_preprocess_run(states[channel], $0.baseAddress) }
            for index in 0..<frameSamples {
                samples[index * channels + channel] = Float(scratch[index]) / 32768
                outputEnergy += Double(scratch[index]) * Double(scratch[index])
            }
        }
        if inputEnergy > 0 { lastGain = Float((outputEnergy / inputEnergy).squareRoot()) }
    }

    /// Scales a frame by the last processed frame's gain, without passing it through the
    /// preprocessor: for a frame partly made of filled-in silence, whose digital zeros would pull
    /// speexdsp's noise estimate down to nothing (it falls at once and climbs back over seconds, so
    /// the noise would pass nearly unsuppressed meanwhile).
    public func applyLastGain(_ samples: inout [Float]) {
        let gain = lastGain
        for index in samples.indices { samples[index] *= gain }
    }
}
