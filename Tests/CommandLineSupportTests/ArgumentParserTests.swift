import CommandLineSupport
import Testing

@Suite(.timeLimit(.minutes(10))) struct ArgumentParserTests {
    let options: [OptionSpec] = [
        .flag("help", short: "h", help: "Show this help."),
        .flag("no-cursor", help: "Leave the cursor out."),
        .value("region", valueName: "X,Y,W,H", help: "Capture a region."),
        .value("fps", valueName: "N", help: "Frames per second."),
    ]

    @Test func flagsValuesAndPositionalsAreSeparated() throws {
        let parsed = try ArgumentParser.parse(["screen", "--fps", "60", "--no-cursor", "out.mp4"], options: options)
        #expect(parsed.positionals == ["screen", "out.mp4"])
        #expect(parsed.flags == ["no-cursor"])
        #expect(parsed.value("fps") == "60")
    }

    @Test func valueMayBeJoinedWithEquals() throws {
        let parsed = try ArgumentParser.parse(["--region=0,0,640,480"], options: options)
        #expect(parsed.value("region") == "0,0,640,480")
    }

    @Test func repeatedOptionKeepsEveryValueAndTheLastWins() throws {
        let parsed = try ArgumentParser.parse(["--fps", "30", "--fps", "60"], options: options)
        #expect(parsed.values["fps"] == ["30", "60"])
        #expect(parsed.value("fps") == "60")
    }

    @Test func doubleDashEndsOptions() throws {
        let parsed = try ArgumentParser.parse(["--", "--help"], options: options)
        #expect(parsed.positionals == ["--help"])
        #expect(parsed.flags.isEmpty)
    }

    @Test func shortFlagIsTheLongOne() throws {
        #expect(try ArgumentParser.parse(["-h"], options: options).has("help"))
    }

    @Test func unknownOptionSuggestsTheNearestName() {
        #expect(throws: ArgumentError.unknownOption("--regoin", suggestion: "region")) {
            try ArgumentParser.parse(["--regoin", "1"], options: options)
        }
        #expect(ArgumentError.unknownOption("--regoin", suggestion: "region").description
            == "unknown option '--regoin'; did you mean '--region'?")
    }

    @Test func unknownOptionFarFromEveryNameSuggestsNothing() {
        #expect(throws: ArgumentError.unknownOption("--bitrate", suggestion: nil)) {
            try ArgumentParser.parse(["--bitrate"], options: options)
        }
    }

    @Test func optionWithoutItsValueSaysWhatItNeeds() {
        #expect(throws: ArgumentError.missingValue(option: "fps", valueName: "N")) {
            try ArgumentParser.parse(["--fps"], options: options)
        }
        #expect(ArgumentError.missingValue(option: "fps", valueName: "N").description
            == "option '--fps' needs a value: --fps N")
    }

    @Test func flagGivenAValueIsRefused() {
        #expect(throws: ArgumentError.flagTakesNoValue(option: "help")) {
            try ArgumentParser.parse(["--help=yes"], options: options)
        }
    }

    @Test func helpLinesAreAligned() {
        #expect(ArgumentParser.optionsHelp(options) == """
              -h, --help            Show this help.
                  --no-cursor       Leave the cursor out.
                  --region X,Y,W,H  Capture a region.
                  --fps N           Frames per second.
            """)
    }
}
