/// What a program and its commands are, as one table: `--help`, the man page (`ManPage`) and
/// the shell completions (`ShellCompletion`) are all rendered from it, so they cannot drift.

/// Options shown under one heading (`Capture options:`).
public struct OptionSection: Sendable {
    public let title: String
    public let options: [OptionSpec]

    public init(_ title: String, _ options: [OptionSpec]) {
        self.title = title
        self.options = options
    }
}

/// A command line worth showing, and what it does.
public struct Example: Sendable {
    public let command: String
    public let explanation: String

    public init(_ command: String, _ explanation: String) {
        self.command = command
        self.explanation = explanation
    }
}

/// What a positional argument is, for completion: a file, words a user types, or one of fixed
/// words (`livepush ctl`'s verbs).
public enum ArgumentKind: Sendable, Equatable {
    case file
    case words
    case choices([String])
}

/// One subcommand (`livepush screen`), or the whole program when it has none (`livepush-capture`).
public struct CommandSpec: Sendable {
    /// The subcommand's name (`"screen"`), or the program's name for a program without subcommands.
    public let name: String
    /// One line: what it does.
    public let summary: String
    /// Usage lines without "Usage: " (`"livepush screen [URL...] [OUTPUT] [options]"`).
    public let synopsis: [String]
    /// Paragraphs after the synopsis, separated by blank lines.
    public let description: String
    public let sections: [OptionSection]
    /// What its positional arguments are (for completion).
    public let arguments: ArgumentKind
    public let examples: [Example]

    public init(name: String, summary: String, synopsis: [String], description: String,
                sections: [OptionSection], arguments: ArgumentKind = .words, examples: [Example] = []) {
        self.name = name
        self.summary = summary
        self.synopsis = synopsis
        self.description = description
        self.sections = sections
        self.arguments = arguments
        self.examples = examples
    }

    /// Every option of every section, in order, without repeats.
    public var options: [OptionSpec] {
        var seen = Set<String>()
        return sections.flatMap(\.options).filter { seen.insert($0.name).inserted }
    }

    /// The `--help` text: usage, description, each option section.
    public var help: String {
        let usage = synopsis.enumerated().map { index, line in (index == 0 ? "Usage: " : "       ") + line }
        var parts = [usage.joined(separator: "\n")]
        if !description.isEmpty { parts.append(description) }
        for section in sections where !section.options.isEmpty {
            parts.append("\(section.title):\n" + ArgumentParser.optionsHelp(section.options))
        }
        if !examples.isEmpty {
            parts.append("Examples:\n" + examples.map { "  \($0.command)\n      \($0.explanation)" }.joined(separator: "\n"))
        }
        return parts.joined(separator: "\n\n")
    }
}

/// A name and what it means: an exit status, a file, an environment variable.
public struct Entry: Sendable {
    public let name: String
    public let meaning: String

    public init(_ name: String, _ meaning: String) {
        self.name = name
        self.meaning = meaning
    }
}

/// A whole executable: its commands (empty for a program that has none), and the man page's
/// other sections.
public struct ProgramSpec: Sendable {
    public let name: String
    /// One line, the man page's NAME line after the dash.
    public let summary: String
    public let description: String
    /// The program's own options (`--help`, `--version`); for a program without subcommands,
    /// its one command carries its options instead.
    public let globalOptions: [OptionSpec]
    public let commands: [CommandSpec]
    public let exitStatus: [Entry]
    public let environment: [Entry]
    public let files: [Entry]
    public let seeAlso: [String]
    /// Options whose values a command lists, by option name: `["mic": "livepush devices --names"]`
    /// (the completions run it to offer the names).
    public let valueCommands: [String: String]

    public init(name: String, summary: String, description: String, globalOptions: [OptionSpec],
                commands: [CommandSpec], exitStatus: [Entry], environment: [Entry] = [], files: [Entry] = [],
                seeAlso: [String] = [], valueCommands: [String: String] = [:]) {
        self.name = name
        self.summary = summary
        self.description = description
        self.globalOptions = globalOptions
        self.commands = commands
        self.exitStatus = exitStatus
        self.environment = environment
        self.files = files
        self.seeAlso = seeAlso
        self.valueCommands = valueCommands
    }

    /// True for a program whose one "command" is itself (`livepush-capture`).
    public var isSingleCommand: Bool { commands.count == 1 && commands[0].name == name }

    /// The top-level `--help` of a program with subcommands: every command with its line, and
    /// the first example of each (the description is the man page's).
    public var help: String {
        let width = (commands.map(\.name.count).max() ?? 0) + 4
        let commandLines = commands.map { command in
            "  " + command.name + String(repeating: " ", count: width - command.name.count) + command.summary
        }
        let examples = commands.compactMap { command in
            command.examples.first.map { "  \($0.command)\n      \($0.explanation)" }
        }
        return """
            Usage: \(name) <command> [options]
                   \(name) --help | --version

            Commands:
            \(commandLines.joined(separator: "\n"))

            Options:
            \(ArgumentParser.optionsHelp(globalOptions))

            Examples:
            \(examples.joined(separator: "\n"))

            Run '\(name) <command> --help' for a command's options, 'man \(name)' for all of them.
            """
    }
}

/// What an option's value is, read off its value name: fixed choices (`x11|pipewire|portal`:
/// every word lower case), a file (`FILE`, `PATH`, `OUTPUT`, `FILE.html`), a directory, or free text.
public enum OptionValueKind: Sendable, Equatable {
    case choices([String])
    case file
    case directory
    case text

    public init(valueName: String) {
        let words = valueName.split(separator: "|").map(String.init)
        if words.count > 1, words.allSatisfy({ word in word.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" || $0 == "_" } }) {
            self = .choices(words)
        } else if valueName.hasPrefix("FILE") || valueName == "PATH" || valueName == "OUTPUT" {
            self = .file
        } else if valueName == "DIR" {
            self = .directory
        } else {
            self = .text
        }
    }
}
