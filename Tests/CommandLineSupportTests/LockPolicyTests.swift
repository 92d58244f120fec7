import CommandLineSupport
import Testing

/// `--on-lock`'s words, read alike by livepush-capture and by livepush before it starts one.
@Suite struct LockPolicyTests {
    @Test func theThreeWordsAreThePolicies() throws {
        #expect(try LockPolicy.parse("pause") == .pause)
        #expect(try LockPolicy.parse("mute") == .mute)
        #expect(try LockPolicy.parse("ignore") == .ignore)
    }

    @Test func anotherWordIsAUsageErrorWithTheNearest() {
        #expect(throws: ArgumentError.invalidValue(option: "on-lock", value: "puase",
                                                   reason: "use pause, mute or ignore (did you mean pause?)")) {
            try LockPolicy.parse("puase")
        }
        #expect(throws: ArgumentError.invalidValue(option: "on-lock", value: "blank", reason: "use pause, mute or ignore")) {
            try LockPolicy.parse("blank")
        }
    }
}
