import Foundation
import Testing
import TestSupport

/// `livepush check-helper` grades real helpers: the reference helpers pass every rule, and each
/// hostile helper fixture fails exactly the rule it breaks, by name.
@Suite struct CheckHelperTests {
    let livepush = BuiltProducts.path("livepush")
    static let hostileFixture = Repository.path("Tests/Fixtures/hostile_helper.py")

    /// Every case the fixture knows: (case, expected rule name or NONE).
    static let hostileCases: [(String, String)] = {
        guard let result = try? ProcessRunner.run("python3", [hostileFixture, "--list"]), result.exitCode == 0 else {
            return [("fixture-did-not-list-its-cases", "LIST")]
        }
        return result.standardOutput.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t")
            guard fields.count >= 2, fields[0] != "other-uid" else { return nil }  // needs root: own test
            return (String(fields[0]), String(fields[1]))
        }
    }()

    static let ruleNames: Set<String> = [
        "TRUNCATED", "BAD_LENGTH", "BAD_MAGIC", "RESERVED", "UNKNOWN_TYPE", "DESCRIPTORS", "VERSION", "STATE", "TEXT",
        "BAD_SLOT", "SLOT_NOT_OWNED", "SEQUENCE", "FORMAT", "GEOMETRY", "AUDIO", "TIMEOUT",
    ]

    /// The rules reported as failed, by name.
    private func failedRules(_ output: String) -> Set<String> {
        Set(output.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("FAIL  "), let colon = line.firstIndex(of: ":") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 6)..<colon])
        })
    }

    @Test func cReferenceHelperPassesEveryRule() throws {
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "2", "--", try Repository.cPatternHelper(), "--group", "{group}", "--audio",
        ])
        #expect(result.exitCode == 0, "\(result)")
        #expect(failedRules(result.standardOutput).isEmpty)
        #expect(result.standardOutput.contains("pass  STOP: answered with FINISH in "))
        #expect(result.standardOutput.contains("check-helper: all rules pass"))
    }

    @Test func pythonReferenceHelperPassesEveryRule() throws {
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "2", "--", "python3", Repository.path("tools/examples/pattern_helper.py"),
            "--group", "{group}", "--size", "640x360",
        ])
        #expect(result.exitCode == 0, "\(result)")
        #expect(failedRules(result.standardOutput).isEmpty)
        #expect(result.standardOutput.contains("check-helper: all rules pass"))
    }

    @Test(arguments: hostileCases)
    func hostileHelperFailsTheRuleItBreaks(hostileCase: String, expectedRule: String) throws {
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "5", "--max-size", "640x360", "--",
            "python3", Self.hostileFixture, "--group", "{group}", "--case", hostileCase,
        ], timeoutSeconds: 30)
        let failedRules = failedRules(result.standardOutput).intersection(Self.ruleNames)
        if expectedRule == "NONE" {
            #expect(failedRules.isEmpty, "\(result)")
        } else {
            #expect(result.exitCode == 1, "\(result)")
            #expect(failedRules == [expectedRule], "\(result)")
        }
        // The fixture exits 0 only when the pusher answered with the expected error code.
        #expect(result.standardOutput.contains("pass  exit: the helper exited with status 0"), "\(result)")
    }

    @Test func missingCommandIsAUsageError() throws {
        let result = try ProcessRunner.run(livepush, ["check-helper"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.hasPrefix("livepush check-helper: missing the helper command after --"))
    }
}
