import Foundation

/// Busy processes of a test's own, so that what the test measures is measured under load (the
/// normal case: users stream while compiling). `stop()` ends them; so does deinit.
public final class CPUHog: @unchecked Sendable {
    private var processes: [RunningCommand] = []

    /// `count` shell loops that never sleep.
    public init(count: Int) throws {
        for _ in 0..<count {
            processes.append(try ProcessRunner.start("sh", ["-c", "while :; do :; done"]))
        }
    }

    public func stop() {
        for process in processes {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            _ = process.finish()
        }
        processes = []
    }

    deinit { stop() }
}
