import CommandLineSupport
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

/// The start every subcommand shares: its options parsed or the usage exit, the signal mask,
/// the test environment's display and RTMP server, `--seconds` and `--runs`.
extension BenchSupport {
    /// `arguments` parsed against `options`; on an error, `livepush-bench COMMAND: <error>` on
    /// stderr and the usage exit status.
    static func parseOrExit(_ arguments: [String], options: [OptionSpec], command: String) -> ParsedArguments {
        do {
            return try ArgumentParser.parse(arguments, options: options)
        } catch {
            Terminal.printError("livepush-bench \(command): \(error)")
            Terminal.exit(.usage)
        }
    }

    /// A parent may have started us with signals blocked (a `swift test` run does: SIGINT and
    /// SIGTERM among them), and children inherit the mask: the publishers, ffmpeg and the painter
    /// are stopped with SIGINT, so unblock everything before starting any of them.
    static func unblockAllSignals() {
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        sigprocmask(SIG_SETMASK, &noSignals, nil)
    }

    /// `--display`, else the test environment's display ($LIVEPUSH_TEST_DISPLAY), else $DISPLAY.
    static func display(_ parsed: ParsedArguments) -> String? {
        let environment = ProcessInfo.processInfo.environment
        return parsed.value("display") ?? environment["LIVEPUSH_TEST_DISPLAY"] ?? environment["DISPLAY"]
    }

    /// `--rtmp`, else the test environment's nginx-rtmp ($LIVEPUSH_TEST_RTMP_URL).
    static func rtmp(_ parsed: ParsedArguments) -> String? {
        parsed.value("rtmp") ?? ProcessInfo.processInfo.environment["LIVEPUSH_TEST_RTMP_URL"]
    }
}

extension ParsedArguments {
    /// `--seconds` (or another option in seconds), `fallback` when absent or not a number.
    func seconds(_ name: String = "seconds", default fallback: Double) -> Double {
        Double(value(name) ?? "") ?? fallback
    }

    /// `--runs`, at least 1; `fallback` when absent or not a number.
    func runs(default fallback: Int) -> Int { max(1, Int(value("runs") ?? "") ?? fallback) }
}
