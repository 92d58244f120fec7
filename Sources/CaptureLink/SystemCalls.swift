import CLinuxShim
import Glibc

/// A failed system call: its name and errno, in words.
public struct SystemCallError: Error, Equatable, Sendable, CustomStringConvertible {
    public let call: String
    public let errno: Int32

    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// Runs a system call, retrying EINTR; returns its result, or throws with errno and the call's name.
@discardableResult
func systemCall<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemCallError) -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemCallError(name, errno: code)
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the one clock of the protocol.
public enum MonotonicClock {
    public static func nowNs() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Sleeps until an absolute CLOCK_MONOTONIC time, so that a paced loop does not drift.
    /// Returns early (false) when a signal arrives and `shouldStop` says so.
    @discardableResult
    public static func sleep(untilNs deadlineNs: UInt64, shouldStop: () -> Bool = { false }) -> Bool {
        var deadline = timespec(tv_sec: Int(deadlineNs / 1_000_000_000), tv_nsec: Int(deadlineNs % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {
            if shouldStop() { return false }
        }
        return true
    }
}

/// An owned file descriptor, closed when the owner is done with it.
final class OwnedDescriptor {
    private(set) var rawValue: Int32

    init(_ rawValue: Int32) { self.rawValue = rawValue }

    deinit { if rawValue >= 0 { Glibc.close(rawValue) } }

    func close() {
        if rawValue >= 0 { Glibc.close(rawValue) }
        rawValue = -1
    }

    /// Gives up ownership and returns the descriptor.
    func take() -> Int32 {
        defer { rawValue = -1 }
        return rawValue
    }
}
