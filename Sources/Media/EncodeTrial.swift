import Glibc
import LinuxSystem

/// Encodes frames of `BenchContent` from memory, with nothing else in the way: how fast x264
/// alone can go at some settings (`livepush doctor`'s preset trial) and what it costs at a
/// real-time pace (the encoder's floor in `livepush-bench push`).
public enum EncodeTrial {
    public struct Result: Sendable {
        public let frames: Int
        public let wallSeconds: Double
        /// CPU time of this process over the trial (x264's threads included), less the drawing.
        public let encodeCPUSeconds: Double
        /// CPU time spent drawing the frames (subtracted above).
        public let drawCPUSeconds: Double
        /// Encoded bytes.
        public let bytes: Int

        /// Encoding's share of one core over the trial, in %.
        public var cpuPct: Double { wallSeconds > 0 ? 100 * encodeCPUSeconds / wallSeconds : 0 }
    }

    /// Encodes `frames` frames (step 60 / fps of the painter's 60 Hz animation per frame), each at
    /// its due time when `paced` (frame n at start + n / fps), else back to back; stops early once
    /// `wallLimitSeconds` have passed. The encoder is drained at the end.
    public static func run(_ content: BenchContent, settings: H264EncoderSettings, frames: Int, paced: Bool,
                           wallLimitSeconds: Double = .infinity) throws(MediaError) -> Result {
        let encoder = try H264Encoder(settings: settings)
        let picture = try VideoFrame(width: content.width, height: content.height)
        let stepsPerFrame = max(1, 60 / max(1, settings.fps))
        let intervalNs = 1_000_000_000 / UInt64(settings.fps)
        let cpuBefore = CPUTime.processSeconds()
        let startNs = MonotonicClock.nowNs()
        var drawSeconds = 0.0, bytes = 0, encoded = 0
        for index in 0..<frames {
            if paced { MonotonicClock.sleep(untilNs: startNs + UInt64(index) * intervalNs) }
            let drawStart = CPUTime.threadSeconds()
            content.draw(step: index * stepsPerFrame, into: picture)
            drawSeconds += CPUTime.threadSeconds() - drawStart
            for packet in try encoder.encode(picture, pts: Int64(index)) { bytes += packet.data.count }
            encoded += 1
            if Double(MonotonicClock.nowNs() - startNs) / 1e9 > wallLimitSeconds { break }
        }
        for packet in try encoder.encode(nil, pts: 0) { bytes += packet.data.count }
        let wall = Double(MonotonicClock.nowNs() - startNs) / 1e9
        let cpu = CPUTime.processSeconds() - cpuBefore
        return Result(frames: encoded, wallSeconds: wall, encodeCPUSeconds: max(0, cpu - drawSeconds),
                      drawCPUSeconds: drawSeconds, bytes: bytes)
    }
}
