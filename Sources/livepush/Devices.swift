import AudioCapture
import CommandLineSupport

/// `livepush devices`: the audio sources PipeWire offers, by the names `--mic` takes.
enum Devices {
    static let options: [OptionSpec] = [
        .flag("names", help: "Print only the microphones' names, one a line (what --mic takes; for scripts and completion)."),
        .flag("help", short: "h", help: "Show this help."),
    ]

    static let spec = CommandSpec(
        name: "devices",
        summary: "List the audio sources (microphones) and sink monitors PipeWire offers.",
        synopsis: ["livepush devices [--names]"],
        description: """
            Lists the PipeWire audio sources (microphones: the NAME for --mic NAME) and the monitors
            of the audio sinks (what plays on them: desktop audio, as livepush-capture --desktop-audio
            captures from the default one). '*' marks the defaults. Exits with 1 when PipeWire cannot be reached.
            """,
        sections: [OptionSection("Options", options)],
        examples: [Example("livepush devices", "Shows the microphone names that --mic NAME takes.")])

    static var usage: String { spec.help }

    static func main(_ arguments: [String]) -> Never {
        let parsed = ArgumentParser.parseOptionsOnly(arguments, options: options, command: "livepush devices",
                                                     usage: usage)
        let sources: [AudioSourceInfo]
        do {
            sources = try AudioDevices.listSources()
        } catch {
            Terminal.printError("livepush devices: \(error)")
            Terminal.exit(.failure)
        }
        if parsed.has("names") {
            print(sources.filter { !$0.isMonitor }.map { $0.name + "\n" }.joined(), terminator: "")
        } else {
            print(render(sources), terminator: "")
        }
        Terminal.exit(.success)
    }

    /// Two tables, names aligned; `*` marks the default of each.
    static func render(_ sources: [AudioSourceInfo]) -> String {
        let microphones = sources.filter { !$0.isMonitor }
        let monitors = sources.filter(\.isMonitor)
        let width = sources.map(\.name.count).max() ?? 0
        func rows(_ list: [AudioSourceInfo], none: String) -> String {
            if list.isEmpty { return "  (\(none))\n" }
            return list.map { source in
                let padding = String(repeating: " ", count: width - source.name.count)
                return "\(source.isDefault ? "*" : " ") \(source.name)\(padding)  \(source.description)\n"
            }.joined()
        }
        return "Audio sources (--mic NAME; * = default):\n"
            + rows(microphones, none: "none: plug in or enable a microphone")
            + "Sink monitors (desktop audio; * = the default sink, which livepush-capture --desktop-audio captures):\n"
            + rows(monitors, none: "none")
    }
}
