import Control
import LivePush
import Testing

/// `livepush ctl NAME keyframe [--follow-up MS]` (issue 22: a keyframe when a viewer joins).
@Suite(.timeLimit(.minutes(10))) struct KeyframeCommandTests {
    @Test func keyframeParsesAloneOrWithAFollowUp() throws {
        #expect(try ControlCommand.parse(["keyframe"]) == .keyframe(followUpMs: nil))
        #expect(try ControlCommand.parse(["keyframe", "--follow-up", "1500"]) == .keyframe(followUpMs: 1500))
        #expect(ControlCommand.keyframe(followUpMs: 1500).arguments == ["--follow-up", "1500"])
        #expect(ControlCommand.keyframe(followUpMs: nil).arguments == [])
        #expect(ControlCommand.verbs.contains { $0.verb == "keyframe" })
    }

    @Test func aWrongFollowUpIsRefusedNamingTheValue() {
        #expect(throws: ControlError.invalidValue(command: "keyframe", value: "50",
                                                  reason: "use a whole number of ms from 100 to 10000")) {
            try ControlCommand.parse(["keyframe", "--follow-up", "50"])
        }
        #expect(throws: ControlError.missingValue(command: "keyframe", expected: "--follow-up MS")) {
            try ControlCommand.parse(["keyframe", "--follow-up"])
        }
        #expect(throws: ControlError.invalidValue(command: "keyframe", value: "now",
                                                  reason: "use: keyframe [--follow-up MS]")) {
            try ControlCommand.parse(["keyframe", "now"])
        }
    }

    @Test func aBroadcastWithoutVideoRefusesSayingWhy() throws {
        let handler = ControlHandler(pusher: try LivePusher(config: LivePushConfig()), hub: nil)
        let answer = handler.answer(requestLine: #"{"command":"keyframe"}"#).answer
        #expect(answer.contains(#""code":-1504"#), "\(answer)")
        #expect(answer.contains("'keyframe' refused: the broadcast has no video yet (screen capture is not running)"),
                "\(answer)")
    }
}
