import Foundation

/// What /proc says about a process the tests started (or one of its children).
public enum ProcessTable {
    /// Whether `pid` exists and is not a zombie waiting to be reaped.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[stat.index(close, offsetBy: 2)...].hasPrefix("Z")
    }
}
