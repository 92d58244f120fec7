import Foundation

/// Test sounds made with the real ffmpeg, and measurements of what came back (issue 17).
public enum SoundSignals {
    /// A stereo file of `seconds` of a sine at `frequencyHz` with peak `amplitude` in both
    /// channels, encoded by ffmpeg with `codec` into a file ending in `.ext` (its container from
    /// the extension).
    public static func toneFile(ext: String, codec: String, frequencyHz: Int, amplitude: Double, seconds: Double,
                                sampleRateHz: Int = 44100) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("tone")).path + "." + ext
        let sine = "\(amplitude)*sin(2*PI*\(frequencyHz)*t)"
        let result = try ProcessRunner.run("ffmpeg", [
            "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi",
            "-i", "aevalsrc=\(sine)|\(sine):s=\(sampleRateHz):d=\(seconds)", "-c:a", codec, path,
        ])
        guard result.exitCode == 0 else { throw AudioAnalysis.DecodeFailed(result: result) }
        return path
    }

    /// The longest run of `windowMs` windows whose level is more than `dropDb` below `referenceDbfs`,
    /// in ms: a gap in a tone that should be continuous.
    public static func longestGapMs(_ samples: [Float], sampleRateHz: Int, referenceDbfs: Double,
                                    dropDb: Double = 20, windowMs: Int = 5) -> Int {
        let window = sampleRateHz * windowMs / 1000
        var longest = 0, current = 0, start = 0
        while start + window <= samples.count {
            let level = AudioAnalysis.rmsDbfs(Array(samples[start..<(start + window)]))
            if level < referenceDbfs - dropDb { current += windowMs } else { current = 0 }
            longest = max(longest, current)
            start += window
        }
        return longest
    }

    /// The noise level outside a tone's band: the mean Goertzel power at frequencies far from
    /// any test tone (300 Hz ... 7.3 kHz, none within 400 Hz of 1 kHz), in dB (relative).
    public static func noiseLevelDb(_ samples: [Float], sampleRateHz: Double) -> Double {
        let probes: [Double] = [310, 2470, 3330, 4710, 6130, 7290]
        let window = Array(samples.prefix(Int(sampleRateHz)))
        let mean = probes.map { AudioAnalysis.tonePower(window, frequencyHz: $0, sampleRateHz: sampleRateHz) }
            .reduce(0, +) / Double(probes.count)
        return 10 * log10(max(mean, 1e-30))
    }

    /// The left channel of the first audio stream of `path`, 32-bit float at `sampleRateHz`: the
    /// level one loudspeaker plays (a mono mix of two equal channels would be 3 dB louder).
    public static func decodeLeft(_ path: String, sampleRateHz: Int = 48000) throws -> [Float] {
        let rawURL = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("left") + ".f32")
        defer { try? FileManager.default.removeItem(at: rawURL) }
        let result = try ProcessRunner.run("ffmpeg", [
            "-nostdin", "-loglevel", "error", "-y", "-i", path, "-map", "0:a:0", "-af", "pan=mono|c0=c0",
            "-ar", String(sampleRateHz), "-f", "f32le", rawURL.path,
        ])
        guard result.exitCode == 0 else { throw AudioAnalysis.DecodeFailed(result: result) }
        let data = try Data(contentsOf: rawURL)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Decodes (the left channel of) what nginx recorded for `key` once it holds at least `seconds` of audio
    /// (polling until `timeoutSeconds`: nginx writes the file as the stream arrives).
    public static func receivedAudio(key: String, atLeastSeconds seconds: Double, timeoutSeconds: Double = 10) throws
        -> [Float]
    {
        let path = try TestEnvironment.recordedFile(key: key).path
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        var samples: [Float] = []
        repeat {
            if FileManager.default.fileExists(atPath: path), let decoded = try? decodeLeft(path) {
                samples = decoded
                if Double(samples.count) / 48000 >= seconds { return samples }
            }
            Thread.sleep(forTimeInterval: 0.2)
        } while Date() < deadline
        return samples
    }
}
