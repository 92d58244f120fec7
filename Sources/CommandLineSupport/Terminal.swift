#if canImport(Glibc)
import Glibc
#endif

/// Output helpers shared by the executables: stdout for results, stderr for diagnostics.
public enum Terminal {
    /// Writes `message` and a newline to standard error.
    public static func printError(_ message: String) {
        var line = message
        if !line.hasSuffix("\n") { line += "\n" }
        var bytes = Array(line.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// Exit codes the executables use: 0 success, 1 a failure at run time, 2 a bad command line.
    public enum ExitCode: Int32 {
        case success = 0
        case failure = 1
        case usage = 2
        /// EX_CONFIG (sysexits.h): "my configuration is wrong, do not restart me". A capture
        /// helper exits with it when it cannot run as configured (no display, a capture target
        /// that does not exist); a supervisor stops at once instead of retrying (SPEC §13.5).
        case configuration = 78
    }

    /// Flushes standard output and exits.
    public static func exit(_ code: ExitCode) -> Never {
        fflush(nil)
        Glibc.exit(code.rawValue)
    }
}

extension ArgumentParser {
    /// A subcommand that takes options only: its parsed arguments; or, for a bad option or any
    /// positional argument, the error and `usage` on stderr and exit 2; or, with `--help`,
    /// `usage` on stdout and exit 0. `command` names it in the error (`livepush doctor`).
    public static func parseOptionsOnly(_ arguments: [String], options: [OptionSpec], command: String,
                                        usage: String) -> ParsedArguments {
        let parsed: ParsedArguments
        do {
            parsed = try parse(arguments, options: options)
            if let extra = parsed.positionals.first { throw ArgumentError.unexpectedArgument(extra) }
        } catch {
            Terminal.printError("\(command): \(error)\n\(usage)")
            Terminal.exit(.usage)
        }
        if parsed.has("help") {
            print(usage)
            Terminal.exit(.success)
        }
        return parsed
    }
}
