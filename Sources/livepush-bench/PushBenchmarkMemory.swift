import Foundation

// Issue 22 (memory): the pusher's own peak RSS, beside the helper + pusher figures of the push lines.

extension PushBenchmark {
    /// ` pusher_rss_mib=<n>` for our publishers (`e2e`, `e2e-rtmps`, `e2e-srt`: the median over the runs
    /// of the `livepush` process's VmHWM, its helper not counted), nothing for ffmpeg's and GStreamer's
    /// (one process each, so their `rss_mib` is already theirs alone).
    static func pusherRssField(_ name: String, _ measurements: [Measurement]) -> String {
        guard name.hasPrefix("e2e") else { return "" }
        return String(format: " pusher_rss_mib=%.1f", median(measurements.map(\.publisherPeakRssMiB)))
    }
}

extension ProcessTree {
    /// The peak resident set of one process since it started (VmHWM of /proc/PID/status), in KiB.
    static func peakRssKiB(_ pid: Int32) -> Int { statusKiB(pid, "VmHWM") }

    /// One "NAME:  N kB" line of /proc/PID/status (VmRSS, VmHWM, ...), in KiB; 0 for a process gone.
    static func statusKiB(_ pid: Int32, _ name: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
}
