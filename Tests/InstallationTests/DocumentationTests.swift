import Foundation
import Testing
import TestSupport

/// The man pages and the bash and zsh completions are rendered from the option tables that
/// `--help` comes from (`livepush --generate-docs man|bash|zsh`): every command and option of the
/// help is in them, groff finds nothing to warn about, and the real bash and zsh complete what a
/// user types.
@Suite(.timeLimit(.minutes(10))) struct DocumentationTests {
    static let programs = ["livepush", "livepush-capture"]
    let livepush = BuiltProducts.path("livepush")

    @Test(arguments: programs) func manPageRendersWithoutAWarning(program: String) throws {
        let page = try generated(program, "man")
        let file = try temporaryFile("\(program).1", page)
        let groff = try ProcessRunner.run("groff", ["-man", "-wall", "-z", file])
        #expect(groff.exitCode == 0 && groff.standardError.isEmpty, "\(groff)")
        let man = try ProcessRunner.run("man", ["-l", file], environment: ["MANWIDTH": "100", "MANPAGER": "cat"])
        #expect(man.exitCode == 0 && man.standardError.isEmpty, "\(man)")
        for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "SEE ALSO"] {
            #expect(man.standardOutput.contains("\n\(heading)\n"), "no \(heading) section in \(program)(1)")
        }
    }

    @Test func livepushManPageHasEveryCommandWithEveryOptionOfItsHelp() throws {
        let page = try generated("livepush", "man")
        let commands = try commandsListed(inHelp: ProcessRunner.run(livepush, ["--help"]).standardOutput)
        try #require(commands.count >= 6, "commands in livepush --help: \(commands)")
        for command in commands {
            let section = try #require(manSection(of: command, in: page), "no section for 'livepush \(command)'")
            let options = optionNames(inHelp: try ProcessRunner.run(livepush, [command, "--help"]).standardOutput)
            #expect(!options.isEmpty, "livepush \(command) --help lists no option")
            for option in options {
                #expect(section.contains("\\fB\\-\\-\(option.replacingOccurrences(of: "-", with: "\\-"))\\fR"),
                        "livepush(1) lacks --\(option) under 'livepush \(command)'")
            }
        }
    }

    @Test func livepushCaptureManPageHasEveryOptionOfItsHelp() throws {
        let page = try generated("livepush-capture", "man")
        let options = optionNames(inHelp: try ProcessRunner.run(BuiltProducts.path("livepush-capture"), ["--help"]).standardOutput)
        try #require(options.count >= 15, "options in livepush-capture --help: \(options)")
        for option in options {
            #expect(page.contains("\\fB\\-\\-\(option.replacingOccurrences(of: "-", with: "\\-"))\\fR"),
                    "livepush-capture(1) lacks --\(option)")
        }
    }

    @Test func anUnknownDocumentFormatIsAUsageError() throws {
        let result = try ProcessRunner.run(livepush, ["--generate-docs", "pdf"])
        #expect(result.exitCode == 2)
        #expect(result.standardError == "livepush: invalid value 'pdf' for '--generate-docs': use man, bash or zsh\n")
    }

    // MARK: bash

    @Test func bashCompletesEveryCommandAndEveryOptionOfEachCommand() throws {
        let commands = try commandsListed(inHelp: ProcessRunner.run(livepush, ["--help"]).standardOutput)
        try #require(!commands.isEmpty)
        #expect(Set(try bashComplete(["livepush", ""])).isSuperset(of: commands))
        for command in commands {
            let help = try ProcessRunner.run(livepush, [command, "--help"]).standardOutput
            let expected = Set(optionNames(inHelp: help).map { "--" + $0 })
            let offered = Set(try bashComplete(["livepush", command, "--"]))
            #expect(offered == expected, "livepush \(command) --<Tab>")
        }
    }

    @Test func bashCompletesAnOptionsFixedChoicesAndFiles() throws {
        #expect(try bashComplete(["livepush", "screen", "--sou"]) == ["--source"])
        #expect(try bashComplete(["livepush", "screen", "--source", "p"]) == ["pipewire", "portal"])
        #expect(try bashComplete(["livepush", "screen", "--source", "=", ""]) == ["x11", "pipewire", "portal", "camera"])
        #expect(try bashComplete(["livepush", "screen", "--camera-format", ""]) == ["yuy2", "mjpeg", "nv12", "i420"])
        #expect(try bashComplete(["livepush", "push", "--scale", ""]) == ["fit", "fill", "crop"])
        #expect(try bashComplete(["livepush-capture", "--portal-source", ""], program: "livepush-capture")
                    == ["monitor", "window", "any"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("completion"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        FileManager.default.createFile(atPath: directory.appendingPathComponent("broadcast.json").path, contents: Data())
        #expect(try bashComplete(["livepush", "push", "--config", directory.path + "/bro"])
                    == [directory.path + "/broadcast.json"])
    }

    @Test(.enabled(if: TestEnvironment.isEnabled(.pipewire))) func bashCompletesMicrophoneNamesFromLivepushDevices() throws {
        let microphone = try TestEnvironment.microphone()
        let names = try ProcessRunner.run(livepush, ["devices", "--names"])
        #expect(names.exitCode == 0)
        #expect(names.standardOutput.split(separator: "\n").contains(Substring(microphone)), "\(names)")
        #expect(try bashComplete(["livepush", "screen", "--mic", ""]).contains(microphone))
    }

    @Test(.enabled(if: TestEnvironment.isEnabled(.pipewire))) func bashCompletesCameraNamesFromLivepushDevices() throws {
        let camera = try PipeWireVideoSource(["--bars"], program: .camera)
        defer { camera.stop() }
        let names = try ProcessRunner.run(livepush, ["devices", "--camera-names"])
        #expect(names.exitCode == 0)
        #expect(names.standardOutput.split(separator: "\n").contains(Substring(camera.name)), "\(names)")
        #expect(try bashComplete(["livepush", "screen", "--camera", ""]).contains(camera.name))
        #expect(try bashComplete(["livepush-capture", "--camera", ""], program: "livepush-capture").contains(camera.name))
    }

    // MARK: zsh

    @Test func zshCompletesCommandsOptionsAndChoices() throws {
        let commands = try commandsListed(inHelp: ProcessRunner.run(livepush, ["--help"]).standardOutput)
        #expect(Set(try zshComplete("livepush ")).isSuperset(of: commands))
        #expect(try zshComplete("livepush screen --sou") == ["--source"])
        #expect(try zshComplete("livepush screen --source ") == ["camera", "pipewire", "portal", "x11"])
        #expect(try zshComplete("livepush push --scale ") == ["crop", "fill", "fit"])
        #expect(try zshComplete("livepush-capture --portal-source ") == ["any", "monitor", "window"])
        let doctorOptions = Set(optionNames(inHelp: try ProcessRunner.run(livepush, ["doctor", "--help"]).standardOutput)
            .map { "--" + $0 })
        #expect(Set(try zshComplete("livepush doctor --")) == doctorOptions)
    }

    // MARK: helpers

    private func generated(_ program: String, _ format: String) throws -> String {
        let result = try ProcessRunner.run(BuiltProducts.path(program), ["--generate-docs", format])
        try #require(result.exitCode == 0 && !result.standardOutput.isEmpty, "\(result)")
        return result.standardOutput
    }

    /// The names under "Commands:" in a top-level help.
    private func commandsListed(inHelp help: String) -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "Commands:") else { return [] }
        return lines[(start + 1)...].prefix { $0.hasPrefix("  ") }.compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// The long names of the options a help lists (`  -h, --help   ...` gives `help`).
    private func optionNames(inHelp help: String) -> [String] {
        help.split(separator: "\n").compactMap { line in
            let trimmed = line.drop { $0 == " " }
            guard line.hasPrefix("  "), let range = trimmed.range(of: "--"),
                  trimmed.distance(from: trimmed.startIndex, to: range.lowerBound) <= 4 else { return nil }
            return String(trimmed[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" })
        }
    }

    /// The man page's text from `.SS "livepush COMMAND"` to the next subsection or section.
    private func manSection(of command: String, in page: String) -> String? {
        guard let start = page.range(of: ".SS \"livepush \(command.replacingOccurrences(of: "-", with: "\\-"))\"\n")
        else { return nil }
        let rest = page[start.upperBound...]
        let end = [rest.range(of: "\n.SS "), rest.range(of: "\n.SH ")].compactMap { $0?.lowerBound }.min() ?? rest.endIndex
        return String(rest[..<end])
    }

    private func temporaryFile(_ name: String, _ contents: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("docs") + "-" + name)
        try contents.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// COMPREPLY after the real bash runs the generated completion function on `words` (the last
    /// one being completed), with the built executables first in PATH.
    private func bashComplete(_ words: [String], program: String = "livepush") throws -> [String] {
        let script = try temporaryFile("\(program).bash", try generated(program, "bash"))
        let function = "_" + program.replacingOccurrences(of: "-", with: "_")
        let driver = """
            source "$1"; shift
            COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
            \(function)
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try ProcessRunner.run("bash", ["-c", driver, "bash", script] + words, environment: pathWithBuiltProducts())
        try #require(result.exitCode == 0 && result.standardError.isEmpty, "\(result)")
        return result.standardOutput.split(separator: "\n").map(String.init)
    }

    /// What the real zsh offers on Tab after `line` (Tests/Fixtures/zsh-complete.zsh), sorted.
    private func zshComplete(_ line: String) throws -> [String] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("zsh"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for program in Self.programs {
            try generated(program, "zsh").write(to: directory.appendingPathComponent("_" + program), atomically: true,
                                                encoding: .utf8)
        }
        var environment = pathWithBuiltProducts()
        environment["TMPDIR"] = directory.path
        let result = try ProcessRunner.run("zsh", ["-f", Repository.path("Tests/Fixtures/zsh-complete.zsh"),
                                                   directory.path, line], environment: environment, timeoutSeconds: 20)
        try #require(result.exitCode == 0 && !result.timedOut, "\(result)")
        return result.standardOutput.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }

    private func pathWithBuiltProducts() -> [String: String] {
        let builtDirectory = URL(fileURLWithPath: livepush).deletingLastPathComponent().path
        return ["PATH": builtDirectory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
    }
}
