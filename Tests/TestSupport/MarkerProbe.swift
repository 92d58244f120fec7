import Foundation

/// Where a marker is in a file (issue 34's replays): a flash in its pictures, a tone in its sound.
public enum MarkerProbe {
    /// Each picture of `path`: its time and its mean brightness (0 to 255), from ffprobe's signalstats.
    public static func lumas(_ path: String) throws -> [(timeS: Double, luma: Double)] {
        let stats = try ProcessRunner.run("ffprobe", ["-v", "error", "-f", "lavfi", "-i", "movie=\(path),signalstats",
                                                      "-show_entries", "frame=pts_time:frame_tags=lavfi.signalstats.YAVG",
                                                      "-of", "csv=p=0"])
        guard stats.exitCode == 0 else { throw MediaProbe.Failed(result: stats) }
        return stats.standardOutput.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let time = Double(fields[0]), let luma = Double(fields[1]) else { return nil }
            return (time, luma)
        }
    }

    /// Where a tone of `frequencyHz` starts in `path`'s first audio track (s, on the file's clock):
    /// its first 5 ms window at `thresholdDbfs` or more (Goertzel); nil when there is none.
    public static func toneStartS(_ path: String, frequencyHz: Double, thresholdDbfs: Double = -20) throws -> Double? {
        let first = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-read_intervals", "%+#1",
                                                      "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
        guard let audioStartS = Double(first.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw MediaProbe.Failed(result: first)
        }
        let samples = try AudioAnalysis.decodeMono(path)
        let levels = AudioAnalysis.toneLevelsDbfs(samples, frequencyHz: frequencyHz, sampleRateHz: 48000, windowSamples: 240)
        return levels.windows.firstIndex { $0 > thresholdDbfs }.map { audioStartS + Double($0 * 240) / 48000 }
    }
}
