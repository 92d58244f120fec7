import Control
import Testing

/// `livepush ctl NAME sei TEXT [--repeat N] [--delay MS] [--keyframe-only]`.
@Suite(.timeLimit(.minutes(10))) struct SEICommandTests {
    @Test func seiTakesItsTextAndOptionsInAnyOrder() throws {
        #expect(try ControlCommand.parse(["sei", "hello"]) == .sei(text: "hello", repeatCount: 1, delayMs: 0, keyFrameOnly: false))
        #expect(try ControlCommand.parse(["sei", "{\"q\":1}", "--keyframe-only", "--delay", "500", "--repeat", "3"])
            == .sei(text: "{\"q\":1}", repeatCount: 3, delayMs: 500, keyFrameOnly: true))
        let command = try ControlCommand.parse(["sei", "hi", "--repeat", "7"])
        #expect(command.verb == "sei")
        #expect(try ControlCommand.parse([command.verb] + command.arguments) == command)
    }

    @Test func badSEICommandsSayWhatIsWrong() {
        #expect(throws: ControlError.missingValue(command: "sei", expected: "TEXT")) { try ControlCommand.parse(["sei"]) }
        #expect(throws: ControlError.missingValue(command: "sei", expected: "TEXT")) {
            try ControlCommand.parse(["sei", "--repeat", "2"])
        }
        #expect(throws: ControlError.invalidValue(command: "sei", value: "0", reason: "--repeat takes 1 to 1000 frames")) {
            try ControlCommand.parse(["sei", "hi", "--repeat", "0"])
        }
        #expect(throws: ControlError.invalidValue(command: "sei", value: "soon", reason: "--delay takes 0 to 600000 ms")) {
            try ControlCommand.parse(["sei", "hi", "--delay", "soon"])
        }
        #expect(throws: ControlError.missingValue(command: "sei", expected: "--delay MS")) {
            try ControlCommand.parse(["sei", "hi", "--delay"])
        }
        #expect(throws: ControlError.invalidValue(command: "sei", value: "--twice",
                                                   reason: "use: sei TEXT [--repeat N] [--delay MS] [--keyframe-only]")) {
            try ControlCommand.parse(["sei", "hi", "--twice"])
        }
        #expect(throws: ControlError.self) { try ControlCommand.parse(["sei", String(repeating: "x", count: 4097)]) }
    }
}
