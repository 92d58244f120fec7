import Foundation

/// Busy loops of the test's own (`sh -c 'while :; do :; done'`), one per core asked for, so that a
/// timing-sensitive path is measured on a busy machine (DESIGN: load is the normal case). `stop()`
/// kills them by their process ids.
public final class CPUHog: @unchecked Sendable {
    private let loops: [RunningCommand]

    public init(processes: Int = 2) throws {
        loops = try (0..<processes).map { _ in try ProcessRunner.start("/bin/sh", ["-c", "while :; do :; done"]) }
    }

    public func stop() {
        for loop in loops {
            kill(loop.processIdentifier, SIGKILL)
            _ = loop.finish()
        }
    }
}
