import Foundation

/// The whole machine's CPU time from /proc/stat: busy and total ticks over all cores.
enum SystemCPU {
    /// Cores online: what "percent of all cores" divides by when /proc/stat cannot be read.
    static var coreCount: Int { Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) }
    /// /proc/stat's tick (USER_HZ).
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    static func ticks() -> (busy: UInt64, total: UInt64)? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let values = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        guard values.count >= 5 else { return nil }
        let idle = values[3] + values[4]  // idle + iowait
        let total = values.reduce(0, +)
        return (total - idle, total)
    }
}
