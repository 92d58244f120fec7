import Foundation
import Testing
import TestSupport

/// The executables, run as a user runs them, with their whole output compared.
@Suite(.timeLimit(.minutes(10))) struct CommandLineTests {
    let livepush = BuiltProducts.path("livepush")
    let capture = BuiltProducts.path("livepush-capture")

    @Test func livepushPrintsItsVersion() throws {
        let result = try ProcessRunner.run(livepush, ["--version"])
        #expect(result.exitCode == 0)
        #expect(result.standardOutput == "livepush 0.1.0\n")
    }

    @Test func livepushHelpListsEveryCommandWithOneLineAndAnExample() throws {
        let result = try ProcessRunner.run(livepush, ["--help"])
        #expect(result.exitCode == 0)
        let help = result.standardOutput
        #expect(help.hasPrefix("""
            livepush 0.1.0: broadcast a Linux screen and microphone to RTMP servers and recordings.

            Usage: livepush <command> [options]
                   livepush --help | --version

            Commands:

            """))
        #expect(!help.contains("Not built yet"))
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex(of: "Commands:"))
        let commandLines = lines[(start + 1)...].prefix { $0.hasPrefix("  ") }
        let commands = commandLines.map { String($0.dropFirst(2).prefix { $0 != " " }) }
        #expect(Set(commands).isSuperset(of: ["screen", "push", "record", "devices", "doctor", "check-helper", "ctl",
                                              "report"]))
        for (command, line) in zip(commands, commandLines) {
            #expect(line.dropFirst(2 + command.count).trimmingCharacters(in: .whitespaces).count > 10,
                    "'\(command)' has no summary")
            #expect(lines.contains { $0.hasPrefix("  livepush \(command)") }, "no example of livepush \(command)")
            let commandHelp = try ProcessRunner.run(livepush, [command, "--help"])
            #expect(commandHelp.exitCode == 0, "livepush \(command) --help: \(commandHelp)")
        }
        #expect(help.hasSuffix("Run 'livepush <command> --help' for a command's options, 'man livepush' for all of them.\n"))
    }

    /// Every command the help lists exists, and every example in it parses (run with --help added,
    /// which each command reads after checking its options and arguments).
    @Test func everyCommandAndExampleInTheHelpIsReal() throws {
        let help = try ProcessRunner.run(livepush, ["--help"]).standardOutput.split(separator: "\n",
                                                                                    omittingEmptySubsequences: false)
        let commandsStart = try #require(help.firstIndex(of: "Commands:"))
        let commands = help[(commandsStart + 1)...].prefix { $0.hasPrefix("  ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(commands == ["screen", "push", "record", "devices", "doctor", "check-helper", "ctl", "report"],
                "\(commands)")
        let examplesStart = try #require(help.firstIndex(of: "Examples:"))
        let examples = help[(examplesStart + 1)...].filter { $0.hasPrefix("  livepush ") }
            .map { $0.split(separator: " ").dropFirst().map(String.init) }
        #expect(examples.count == commands.count)
        for example in examples where example.first != "check-helper" {  // its arguments go to the helper
            let result = try ProcessRunner.run(livepush, example + ["--help"])
            #expect(result.exitCode == 0, "livepush \(example.joined(separator: " ")): \(result)")
        }
        for command in commands {
            #expect(try ProcessRunner.run(livepush, [command, "--help"]).exitCode == 0, "\(command) --help")
        }
    }

    @Test func livepushMisspelledOptionIsAUsageErrorWithASuggestion() throws {
        let result = try ProcessRunner.run(livepush, ["--verison"])
        #expect(result.exitCode == 2)
        #expect(result.standardOutput == "")
        #expect(result.standardError == """
            livepush: unknown option '--verison'; did you mean '--version'?
            Run 'livepush --help' for usage.

            """)
    }

    @Test func livepushUnknownCommandIsAUsageError() throws {
        let result = try ProcessRunner.run(livepush, ["broadcast"])
        #expect(result.exitCode == 2)
        #expect(result.standardError == "livepush: unknown command 'broadcast'\nRun 'livepush --help' for the commands.\n")
    }

    @Test func captureHelperPrintsItsVersionAndHelp() throws {
        let version = try ProcessRunner.run(capture, ["--version"])
        #expect(version.exitCode == 0)
        #expect(version.standardOutput == "livepush-capture 0.1.0\n")
        let help = try ProcessRunner.run(capture, ["-h"])
        #expect(help.exitCode == 0)
        #expect(help.standardOutput.hasPrefix("livepush-capture 0.1.0: the LivePush capture helper (X11, PipeWire, the ScreenCast portal, cameras).\n"))
    }

    @Test func captureHelperWithoutAGroupSaysWhatIsMissing() throws {
        let result = try ProcessRunner.run(capture, [])
        #expect(result.exitCode == 2)
        #expect(result.standardError == "livepush-capture: missing argument <--group NAME>\n"
            + "Run 'livepush-capture --help' for usage.\n")
    }

    @Test func captureHelperRefusesTwoTargets() throws {
        let result = try ProcessRunner.run(capture, ["--group", "g", "--monitor", "0", "--region", "0,0,10,10"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.hasPrefix("livepush-capture: invalid value '0,0,10,10' for '--region': "
            + "choose one of --monitor, --region, --window, --window-name"))
    }

    @Test func captureHelperExplainsABadRegion() throws {
        let result = try ProcessRunner.run(capture, ["--group", "g", "--region", "10,10,0,5"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.hasPrefix("livepush-capture: invalid value '10,10,0,5' for '--region': "
            + "use X,Y,W,H with W and H above 0, e.g. 0,0,1280,720"))
    }

    @Test func captureHelperWithoutADisplaySaysSo() throws {
        let result = try ProcessRunner.run(capture, ["--group", "g"], environment: ["DISPLAY": ""])
        #expect(result.exitCode == 78, "EX_CONFIG: a configuration error, not to be restarted")
        #expect(result.standardError == "livepush-capture: no X display: DISPLAY is not set; "
            + "run inside an X session or pass --display :N\n")
    }
}
