import Testing
import TestSupport

/// The executables, run as a user runs them, with their whole output compared.
@Suite struct CommandLineTests {
    let livepush = BuiltProducts.path("livepush")
    let capture = BuiltProducts.path("livepush-capture")

    @Test func livepushPrintsItsVersion() throws {
        let result = try ProcessRunner.run(livepush, ["--version"])
        #expect(result.exitCode == 0)
        #expect(result.standardOutput == "livepush 0.1.0\n")
    }

    @Test func livepushHelpListsTheCommands() throws {
        let result = try ProcessRunner.run(livepush, ["--help"])
        #expect(result.exitCode == 0)
        #expect(result.standardOutput == """
            livepush 0.1.0: broadcast a Linux screen and microphone to RTMP servers and recordings.

            Usage: livepush <command> [options]
                   livepush --help | --version

            Commands (each with an example; 'livepush <command> --help' for its options):
              screen          Record the screen and push it to RTMP servers; starts its own capture helper.
                                livepush screen rtmp://live.example.com/app/KEY talk.mp4 --duration 600
              push            Push the screen to RTMP servers (optionally recording it) from its own helper or a group's.
                                livepush push rtmp://127.0.0.1/live/KEY --record talk.mp4
              record          Record (and push) what any capture helper sends on a group.
                                livepush record --group studio talk.mkv
              devices         List the audio sources (microphones) and sink monitors PipeWire offers.
                                livepush devices
              doctor          Check this machine: X display and MIT-SHM, PipeWire, H.264 and AAC encoders.
                                livepush doctor
              check-helper    Run a capture helper and check it against the Capture Link specification.
                                livepush check-helper -- ./my-helper --group {group}

            Options:
              -h, --help     Show this help.
                  --version  Print the version.

            The microphone is sent by default (--mic NAME, --no-mic); --desktop-audio adds the desktop's sound.

            """)
    }

    /// Every command the help lists exists, and every example in it parses (run with --help added,
    /// which each command reads after checking its options and arguments).
    @Test func everyCommandAndExampleInTheHelpIsReal() throws {
        let help = try ProcessRunner.run(livepush, ["--help"]).standardOutput.split(separator: "\n")
        let commands = help.filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") && !$0.contains("--") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(commands == ["screen", "push", "record", "devices", "doctor", "check-helper"], "\(commands)")
        let examples = help.filter { $0.hasPrefix("                    livepush ") }
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
        #expect(help.standardOutput.hasPrefix("livepush-capture 0.1.0: the LivePush capture helper (X11, PipeWire, the ScreenCast portal).\n"))
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
