import Glibc

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
        let cpuBefore = processCPUSeconds()
        let startNs = monotonicNs()
        var drawSeconds = 0.0, bytes = 0, encoded = 0
        for index in 0..<frames {
            if paced { sleep(untilNs: startNs + UInt64(index) * intervalNs) }
            let drawStart = threadCPUSeconds()
            content.draw(step: index * stepsPerFrame, into: picture)
            drawSeconds += threadCPUSeconds() - drawStart
            for packet in try encoder.encode(picture, pts: Int64(index)) { bytes += packet.data.count }
            encoded += 1
            if Double(monotonicNs() - startNs) / 1e9 > wallLimitSeconds { break }
        }
        for packet in try encoder.encode(nil, pts: 0) { bytes += packet.data.count }
        let wall = Double(monotonicNs() - startNs) / 1e9
        let cpu = processCPUSeconds() - cpuBefore
        return Result(frames: encoded, wallSeconds: wall, encodeCPUSeconds: max(0, cpu - drawSeconds),
                      drawCPUSeconds: drawSeconds, bytes: bytes)
    }

    private static func monotonicNs() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private static func sleep(untilNs deadline: UInt64) {
        var due = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nil) == EINTR {}
    }

    private static func threadCPUSeconds() -> Double { cpuSeconds(CLOCK_THREAD_CPUTIME_ID) }

    private static func processCPUSeconds() -> Double { cpuSeconds(CLOCK_PROCESS_CPUTIME_ID) }

    private static func cpuSeconds(_ clock: clockid_t) -> Double {
        var now = timespec()
        clock_gettime(clock, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
