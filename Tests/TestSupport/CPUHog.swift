import Foundation

/// Busy processes of a test's own, so that what the test measures is measured under load (the
/// normal case: users stream while compiling). `stop()` ends them; so does deinit.
public final class CPUHog: @unchecked Sendable {
    private var processes: [RunningCommand] = []

    /// `count` busy loops (tools/cpu-hog), which also end if the test process dies before `stop()`.
    public init(count: Int) throws {
        for _ in 0..<count {
            processes.append(try ProcessRunner.start(Repository.path("tools/cpu-hog"), []))
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
