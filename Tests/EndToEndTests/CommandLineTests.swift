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

            Commands:
              screen          Record the screen to a file (starts its own capture helper).
              record          Record what a capture helper sends on a group.
              push            Push the screen to an RTMP server (and optionally record it).
              doctor          Check this machine: X display and MIT-SHM, PipeWire, H.264 and AAC encoders.
              check-helper    Run a capture helper and check it against the Capture Link specification.
              devices         List the audio sources (microphones) and sink monitors PipeWire offers.
              ctl             Steer a running broadcast: status, pause, mute, bitrate, add/remove destinations, events.
              report          Write a session report (HTML, charts, summary, timeline) from an --events file.

            Options:
              -h, --help     Show this help.
                  --version  Print the version.

            Not built yet: the microphone.
            Run 'livepush <command> --help' for a command's options.

            """)
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
        #expect(help.standardOutput.hasPrefix("livepush-capture 0.1.0: the LivePush capture helper for X11.\n"))
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
        #expect(result.exitCode == 1)
        #expect(result.standardError == "livepush-capture: no X display: DISPLAY is not set; "
            + "run inside an X session or pass --display :N\n")
    }
}
