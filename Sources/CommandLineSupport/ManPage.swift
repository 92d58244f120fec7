/// A program's man page in section 1, rendered as roff (the `man` macros) from its `ProgramSpec`.
/// `man -l FILE` shows it; `groff -man -wall -z FILE` finds nothing to warn about.
public enum ManPage {
    /// - Parameters:
    ///   - date: the page's date, `YYYY-MM-DD` (the Makefile passes the last commit's date, so a
    ///     package build is reproducible).
    ///   - version: the program's version, shown in the footer.
    public static func render(_ program: ProgramSpec, date: String, version: String) -> String {
        var page = Roff()
        page.request("TH", program.name.uppercased(), "1", date, "\(program.name) \(version)", "User Commands")
        page.section("NAME")
        page.text("\(program.name) \\- \(escape(program.summary))")

        page.section("SYNOPSIS")
        if program.isSingleCommand {
            for line in program.commands[0].synopsis { page.synopsisLine(line) }
        } else {
            page.synopsisLine("\(program.name) COMMAND [OPTIONS]")
            page.synopsisLine("\(program.name) --help | --version")
        }

        page.section("DESCRIPTION")
        page.paragraphs(program.description)
        if program.isSingleCommand {
            page.paragraphs(program.commands[0].description)
            for section in program.commands[0].sections where !section.options.isEmpty {
                page.section(section.title.uppercased())
                page.options(section.options)
            }
        } else {
            page.section("OPTIONS")
            page.options(program.globalOptions)
            page.section("COMMANDS")
            for command in program.commands {
                page.request("SS", "\(program.name) \(command.name)")
                page.text(escape(command.summary))
                page.request("PP")
                for line in command.synopsis { page.synopsisLine(line) }
                page.request("PP")
                page.paragraphs(command.description)
                for section in command.sections where !section.options.isEmpty {
                    page.request("PP")
                    page.text("\\fB\(escape(section.title))\\fR")
                    page.options(section.options)
                }
            }
        }

        let examples = program.commands.flatMap(\.examples)
        if !examples.isEmpty {
            page.section("EXAMPLES")
            for example in examples {
                page.request("TP")
                page.text("\\fB\(escape(example.command))\\fR")
                page.text(escape(example.explanation))
            }
        }
        page.entries("EXIT STATUS", program.exitStatus)
        page.entries("ENVIRONMENT", program.environment)
        page.entries("FILES", program.files)
        if !program.seeAlso.isEmpty {
            page.section("SEE ALSO")
            page.text(program.seeAlso.map { name in
                let parts = name.split(separator: "(")
                return parts.count == 2 ? "\\fB\(escape(String(parts[0])))\\fR(\(parts[1])" : escape(name)
            }.joined(separator: ", "))
        }
        return page.text
    }

    /// Text made safe for roff: backslashes doubled as `\e`, hyphens as `\-` (so they stay
    /// ASCII hyphens in a terminal and in copied commands), and a line starting with a control
    /// character or an apostrophe guarded with `\&`.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "\\": escaped += "\\e"
            case "-": escaped += "\\-"
            default: escaped.append(character)
            }
        }
        return escaped.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : String(line)
        }.joined(separator: "\n")
    }
}

/// A roff document being written, one request or text line at a time.
private struct Roff {
    var text = ""

    mutating func request(_ name: String, _ arguments: String...) {
        let quoted = arguments.map { "\"\(ManPage.escape($0).replacingQuotes)\"" }
        text += "." + ([name] + quoted).joined(separator: " ") + "\n"
    }

    mutating func section(_ title: String) { request("SH", title) }

    mutating func text(_ line: String) {
        for part in line.split(separator: "\n", omittingEmptySubsequences: true) { text += part + "\n" }
    }

    /// A usage line: the words in upper case and the brackets as typed, the rest in bold.
    mutating func synopsisLine(_ line: String) {
        request("br")
        let words = line.split(separator: " ").map { word -> String in
            let escaped = ManPage.escape(String(word))
            let isPlaceholder = word.contains(where: \.isUppercase) && !word.hasPrefix("--")
            return isPlaceholder ? "\\fI\(escaped)\\fR" : "\\fB\(escaped)\\fR"
        }
        text(words.joined(separator: " "))
    }

    /// Paragraphs separated by blank lines; the lines of one paragraph are joined (roff fills them).
    mutating func paragraphs(_ prose: String) {
        let blocks = prose.paragraphs.map(\.trimmingWhitespace).filter { !$0.isEmpty }
        for (index, block) in blocks.enumerated() {
            if index > 0 { request("PP") }
            text(ManPage.escape(block))
        }
    }

    mutating func options(_ options: [OptionSpec]) {
        for option in options {
            request("TP")
            var label = option.shortName.map { "\\fB\\-\($0)\\fR, " } ?? ""
            label += "\\fB\\-\\-\(ManPage.escape(option.name))\\fR"
            if let valueName = option.valueName { label += " \\fI\(ManPage.escape(valueName))\\fR" }
            text(label)
            text(ManPage.escape(option.help))
        }
    }

    mutating func entries(_ title: String, _ entries: [Entry]) {
        guard !entries.isEmpty else { return }
        section(title)
        for entry in entries {
            request("TP")
            text("\\fB\(ManPage.escape(entry.name))\\fR")
            text(ManPage.escape(entry.meaning))
        }
    }
}

private extension String {
    /// A roff request argument cannot hold a plain double quote: it becomes `\(dq`.
    var replacingQuotes: String {
        var result = ""
        for character in self { result += character == "\"" ? "\\(dq" : String(character) }
        return result
    }

    /// The text cut at each blank line.
    var paragraphs: [String] {
        var blocks: [String] = []
        var current: [Substring] = []
        for line in split(separator: "\n", omittingEmptySubsequences: false) {
            if line.allSatisfy(\.isWhitespace) {
                if !current.isEmpty { blocks.append(current.joined(separator: "\n")) }
                current = []
            } else {
                current.append(line)
            }
        }
        if !current.isEmpty { blocks.append(current.joined(separator: "\n")) }
        return blocks
    }

    var trimmingWhitespace: String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice = slice.dropFirst() }
        while let last = slice.last, last.isWhitespace { slice = slice.dropLast() }
        return String(slice)
    }
}
