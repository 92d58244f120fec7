/// Checks the timestamps of consecutive audio chunks (PipeWireAudioCapture, AUDIO messages).
public enum ChunkTimeline {
    /// What is wrong with `ptsNs`, chunks of `chunkNs` each, or an empty list when nothing is.
    ///
    /// A step is either continuous (the chunk's length, within `toleranceNs`) or a forward
    /// discontinuity of more than `resyncNs` beyond it: the capture re-anchors its timeline only
    /// when PipeWire's clock and its sample count disagree by more than 30 ms (a graph xrun on
    /// a loaded machine), and never backwards. At most `maxDiscontinuities` of those are allowed.
    public static func problems(
        _ ptsNs: [UInt64], chunkNs: Int64, toleranceNs: Int64 = 1_000_000, resyncNs: Int64 = 30_000_000,
        maxDiscontinuities: Int = 1
    ) -> [String] {
        var problems: [String] = []
        var discontinuities = 0
        for (index, (previous, next)) in zip(ptsNs, ptsNs.dropFirst()).enumerated() {
            let stepNs = Int64(bitPattern: next &- previous)
            if abs(stepNs - chunkNs) <= toleranceNs { continue }
            if stepNs > chunkNs + resyncNs {
                discontinuities += 1
                continue
            }
            problems.append("step \(index + 1) is \(Double(stepNs) / 1e6) ms")
        }
        if discontinuities > maxDiscontinuities {
            problems.append("\(discontinuities) discontinuities in \(ptsNs.count) chunks")
        }
        return problems
    }
}
