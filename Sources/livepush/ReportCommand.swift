import CommandLineSupport
import Dashboard
import Foundation

/// `livepush report EVENTS.jsonl OUT.html`: the session report of a saved events file.
enum ReportCommand {
    static let options: [OptionSpec] = [
        .value("title", valueName: "TEXT", help: "The report's title (default: the events file's name)."),
        .flag("help", short: "h", help: "Show this help."),
    ]

    static let spec = CommandSpec(
        name: "report",
        summary: "Write a session report (HTML, charts, summary, timeline) from an --events file.",
        synopsis: ["livepush report EVENTS.jsonl OUT.html [--title TEXT]"],
        description: """
            Writes one self-contained HTML file (Chart.js inlined, works offline) from the events a run
            wrote with --events FILE: a summary (duration, frames sent, repeated, dropped, reconnections,
            bytes, bitrates per destination, audio level, CPU), the charts over the whole session, and
            every warning and error on the timeline. A run can also write it itself: --report OUT.html.
            """,
        sections: [OptionSection("Options", options)],
        arguments: .file,
        examples: [Example("livepush report talk.jsonl talk.html",
                           "Turns the events of 'livepush screen ... --events talk.jsonl' into a report.")])

    static var usage: String { spec.help }

    static func main(_ arguments: [String]) -> Never {
        let parsed: ParsedArguments
        do {
            parsed = try ArgumentParser.parse(arguments, options: options)
            if parsed.has("help") {
                print(usage)
                Terminal.exit(.success)
            }
            guard parsed.positionals.count == 2 else {
                throw parsed.positionals.count < 2 ? ArgumentError.missingArgument(parsed.positionals.isEmpty
                    ? "EVENTS.jsonl" : "OUT.html") : ArgumentError.unexpectedArgument(parsed.positionals[2])
            }
        } catch {
            Terminal.printError("livepush report: \(error)\n\(usage)")
            Terminal.exit(.usage)
        }
        let input = parsed.positionals[0], output = parsed.positionals[1]
        guard let text = try? String(contentsOfFile: input, encoding: .utf8) else {
            let reason = FileManager.default.fileExists(atPath: input) ? "cannot read it" : "no such file"
            Terminal.printError("livepush report: '\(input)': \(reason)")
            Terminal.exit(.failure)
        }
        let report = SessionReport(lines: text.components(separatedBy: "\n"))
        do {
            try report.write(to: output, title: parsed.value("title") ?? URL(fileURLWithPath: input).lastPathComponent)
        } catch {
            Terminal.printError("livepush report: \(error)")
            Terminal.exit(.failure)
        }
        if report.skippedLines > 0 {
            Terminal.printError("livepush report: \(report.skippedLines) lines of '\(input)' were not events; skipped")
        }
        print("Report of \(report.eventCount) events written to \(output)")
        Terminal.exit(.success)
    }
}
