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
public func systemCall<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemCallError) -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemCallError(name, errno: code)
    }
}

/// CLOCK_MONOTONIC: the one clock of Capture Link, of the pusher and of every helper.
public enum MonotonicClock {
    public static func nowNs() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// The same clock in milliseconds, for deadlines.
    public static func nowMs() -> Int { Int(nowNs() / 1_000_000) }

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

/// CPU time in seconds: the process's (all its threads) or the calling thread's.
public enum CPUTime {
    public static func processSeconds() -> Double { seconds(CLOCK_PROCESS_CPUTIME_ID) }
    public static func threadSeconds() -> Double { seconds(CLOCK_THREAD_CPUTIME_ID) }

    private static func seconds(_ clock: clockid_t) -> Double {
        var now = timespec()
        clock_gettime(clock, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
