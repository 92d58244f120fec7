import Foundation

/// What the benchmarks share: finding the programs built beside this one, and the CPU a child
/// process used.
enum BenchSupport {
    /// A program built beside this benchmark (`livepush`, `livepush-capture`).
    static func sibling(_ name: String) -> URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent(name)
    }

    /// CPU seconds (user and system) of the children this process has waited for.
    static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return LinkBenchmark.cpuSeconds(usage)
    }

    /// Runs `process` (configured, not started) for `seconds` then stops it with `stop`, or, with
    /// nil, until it exits by itself; returns its CPU time (and that of the descendants it waited
    /// for) over the wall time, in percent of one core, and its exit status.
    static func cpuPercent(running process: Process, seconds: Double?,
                           stop: (Process) -> Void = { $0.terminate() }) throws -> (cpuPct: Double, status: Int32) {
        let before = childrenCPUSeconds()
        let started = Date()
        try process.run()
        if let seconds {
            Thread.sleep(forTimeInterval: seconds)
            stop(process)
        }
        process.waitUntilExit()
        let elapsed = Date().timeIntervalSince(started)
        return (100 * (childrenCPUSeconds() - before) / elapsed, process.terminationStatus)
    }
}
