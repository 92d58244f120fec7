#if canImport(Glibc)
import Glibc
import LinuxSystem
#endif

/// `--generate-docs man|bash|zsh`, shared by both executables: prints the program's man page or
/// completion script, rendered from its `ProgramSpec`.
public enum DocumentationOutput {
    /// Prints the document for `format` and returns `.success`, or prints a usage error naming
    /// the formats and returns `.usage`.
    public static func print(_ program: ProgramSpec, format: String, command: String) -> Terminal.ExitCode {
        switch format {
        case "man": Swift.print(ManPage.render(program, date: pageDate(), version: LivePushVersion.current), terminator: "")
        case "bash": Swift.print(ShellCompletion.bash(program), terminator: "")
        case "zsh": Swift.print(ShellCompletion.zsh(program), terminator: "")
        default:
            Terminal.printError("\(command): invalid value '\(format)' for '--generate-docs': use man, bash or zsh")
            return .usage
        }
        return .success
    }

    /// The man page's date: `SOURCE_DATE_EPOCH` (set by `make deb` to the last commit's time, so a
    /// build is reproducible), else today, as YYYY-MM-DD in UTC.
    static func pageDate() -> String {
        var seconds = time(nil)
        if let text = getenv("SOURCE_DATE_EPOCH").map({ String(cString: $0) }), let epoch = Int(text) {
            seconds = time_t(epoch)
        }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let month = Int(parts.tm_mon) + 1, day = Int(parts.tm_mday)
        return "\(Int(parts.tm_year) + 1900)-\(month < 10 ? "0" : "")\(month)-\(day < 10 ? "0" : "")\(day)"
    }
}
