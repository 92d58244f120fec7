import Foundation

/// Decodes audio with the real ffmpeg and measures it: what a listener would hear, in numbers.
public enum AudioAnalysis {
    public struct DecodeFailed: Error, CustomStringConvertible {
        public let result: CommandResult
        public var description: String { "ffmpeg could not decode the audio: \(result)" }
    }

    /// Audio track `track` (0: the first) of `path` (any container ffmpeg reads), mixed to mono
    /// 32-bit float at `sampleRateHz`.
    public static func decodeMono(_ path: String, sampleRateHz: Int = 48000, track: Int = 0) throws -> [Float] {
        let rawURL = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("decoded") + ".f32")
        defer { try? FileManager.default.removeItem(at: rawURL) }
        let result = try ProcessRunner.run("ffmpeg", [
            "-nostdin", "-loglevel", "error", "-y", "-i", path, "-map", "0:a:\(track)",
            "-ac", "1", "-ar", String(sampleRateHz), "-f", "f32le", rawURL.path,
        ])
        guard result.exitCode == 0 else { throw DecodeFailed(result: result) }
        let data = try Data(contentsOf: rawURL)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The frequency with the most energy in `searchHz`, found with the Goertzel algorithm:
    /// a 10 Hz scan, then a 0.5 Hz scan around the best bin. Uses at most one second of samples.
    public static func dominantFrequencyHz(
        _ samples: [Float], sampleRateHz: Double, searchHz: ClosedRange<Double> = 50...8000
    ) -> Double {
        let window = Array(samples.prefix(Int(sampleRateHz)))
        func best(from low: Double, to high: Double, step: Double) -> Double {
            var bestHz = low
            var bestPower = -1.0
            for hz in stride(from: low, through: high, by: step) {
                let power = tonePower(window, frequencyHz: hz, sampleRateHz: sampleRateHz)
                if power > bestPower { (bestHz, bestPower) = (hz, power) }
            }
            return bestHz
        }
        let coarse = best(from: searchHz.lowerBound, to: searchHz.upperBound, step: 10)
        return best(from: max(searchHz.lowerBound, coarse - 10), to: min(searchHz.upperBound, coarse + 10), step: 0.5)
    }

    /// The level of the sine at `frequencyHz` in `samples` (at most one second used), in dB
    /// relative to full scale as `rmsDbfs` counts it (a full-scale sine alone is -3 dBFS).
    public static func toneLevelDbfs(_ samples: [Float], frequencyHz: Double, sampleRateHz: Double) -> Double {
        let window = Array(samples.prefix(Int(sampleRateHz)))
        guard !window.isEmpty else { return -.infinity }
        let amplitude = 2 * tonePower(window, frequencyHz: frequencyHz, sampleRateHz: sampleRateHz).squareRoot()
            / Double(window.count)
        return 20 * log10(max(amplitude, 1e-12) / 2.squareRoot())
    }

    /// The tone's level (dBFS) in each whole window of `windowSamples`, and their median (nil
    /// for fewer samples than one window). A short dropout lowers one window, not the median.
    public static func toneLevelsDbfs(_ samples: [Float], frequencyHz: Double, sampleRateHz: Double,
                                      windowSamples: Int = 4800) -> (windows: [Double], median: Double?) {
        let windows = stride(from: 0, through: samples.count - windowSamples, by: windowSamples).map {
            toneLevelDbfs(Array(samples[$0..<$0 + windowSamples]), frequencyHz: frequencyHz, sampleRateHz: sampleRateHz)
        }
        return (windows, windows.isEmpty ? nil : windows.sorted()[windows.count / 2])
    }

    /// Root-mean-square level in dB relative to full scale (a full-scale sine is -3 dBFS); -inf for silence.
    public static func rmsDbfs(_ samples: [Float]) -> Double {
        guard !samples.isEmpty else { return -.infinity }
        let meanSquare = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)
        return 10 * log10(meanSquare)
    }

    /// The energy of `samples` at `frequencyHz` (the Goertzel algorithm), to compare tones in one signal.
    public static func tonePower(_ samples: [Float], frequencyHz: Double, sampleRateHz: Double) -> Double {
        SyncMarks.tonePower(samples[...], frequencyHz: frequencyHz, sampleRateHz: sampleRateHz)
    }
}
