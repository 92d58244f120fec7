import Foundation
import Testing
import TestSupport

/// `livepush check-helper` grades real helpers: the reference helpers pass every rule and path,
/// each hostile helper fixture fails exactly the rule it breaks, and each broken helper exactly the
/// path it mishandles, by name.
@Suite(.timeLimit(.minutes(10))) struct CheckHelperTests {
    let livepush = BuiltProducts.path("livepush")
    static let hostileFixture = Repository.path("Tests/Fixtures/hostile_helper.py")
    /// The lines every path adds when a helper handles it.
    static let pathLines = [
        "pass  CONFIG after START:", "pass  optional unknown type:", "pass  RELEASEs withheld:",
        "pass  STOP right after WELCOME:", "pass  silent pusher:", "pass  ERROR from the pusher:",
        "pass  unknown required type:",
    ]

    /// Every case the fixture knows: (case, expected rule name or NONE).
    static let hostileCases: [(String, String)] = {
        guard let result = try? ProcessRunner.run("python3", [hostileFixture, "--list"]), result.exitCode == 0 else {
            return [("fixture-did-not-list-its-cases", "LIST")]
        }
        return result.standardOutput.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t")
            // other-uid needs root (its own test); the [pusher only] cases are HostileHelperTests'.
            guard fields.count >= 3, fields[0] != "other-uid", !fields[2].contains("[pusher only]") else { return nil }
            return (String(fields[0]), String(fields[1]))
        }
    }()

    static let ruleNames: Set<String> = [
        "TRUNCATED", "BAD_LENGTH", "BAD_MAGIC", "RESERVED", "UNKNOWN_TYPE", "DESCRIPTORS", "VERSION", "STATE", "TEXT",
        "BAD_SLOT", "SLOT_NOT_OWNED", "SEQUENCE", "FORMAT", "GEOMETRY", "AUDIO", "TIMEOUT",
    ]

    /// The rules reported as failed, by name.
    static func failedRules(_ output: String) -> Set<String> {
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
        #expect(Self.failedRules(result.standardOutput).isEmpty)
        #expect(result.standardOutput.contains("pass  STOP: answered with FINISH in "))
        #expect(result.standardOutput.contains("check-helper: all rules pass"))
        for line in Self.pathLines { #expect(result.standardOutput.contains(line), "\(line)\n\(result)") }
    }

    @Test func pythonReferenceHelperPassesEveryRule() throws {
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "2", "--", "python3", Repository.path("tools/examples/pattern_helper.py"),
            "--group", "{group}", "--size", "640x360",
        ])
        #expect(result.exitCode == 0, "\(result)")
        #expect(Self.failedRules(result.standardOutput).isEmpty)
        #expect(result.standardOutput.contains("check-helper: all rules pass"))
        for line in Self.pathLines { #expect(result.standardOutput.contains(line), "\(line)\n\(result)") }
    }

    /// Our own X11 helper handles every path too (CONFIG's smaller maximum: it scales, LPC_CAP_SCALE).
    @Test(.enabled(if: TestEnvironment.isEnabled(.x11), "needs the test Xvfb (make test)"), .timeLimit(.minutes(10)))
    func livepushCapturePassesEveryRuleAndPath() throws {
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "2", "--", BuiltProducts.path("livepush-capture"), "--group", "{group}",
            "--display", try TestEnvironment.display(),
        ], timeoutSeconds: 90)
        #expect(result.exitCode == 0, "\(result)")
        #expect(Self.failedRules(result.standardOutput).isEmpty, "\(result)")
        for line in Self.pathLines { #expect(result.standardOutput.contains(line), "\(line)\n\(result)") }
    }

    @Test(arguments: hostileCases)
    func hostileHelperFailsTheRuleItBreaks(hostileCase: String, expectedRule: String) throws {
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "5", "--max-size", "640x360", "--",
            "python3", Self.hostileFixture, "--group", "{group}", "--case", hostileCase,
        ], timeoutSeconds: 30)
        let failedRules = Self.failedRules(result.standardOutput).intersection(Self.ruleNames)
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

/// Each broken helper of Tests/Fixtures/broken_path_helper.py mishandles one path; check-helper
/// must fail exactly that path's line (and the rules the fault breaks on the way), by name.
/// Serialized: each run lasts up to 20 s and several at once on a loaded machine miss their timers.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CheckHelperPathTests {
    let livepush = BuiltProducts.path("livepush")
    static let brokenFixture = Repository.path("Tests/Fixtures/broken_path_helper.py")

    /// Every case of the broken-path fixture: (case, the check-helper lines that must fail).
    static let brokenCases: [(String, String)] = {
        guard let result = try? ProcessRunner.run("python3", [brokenFixture, "--list"]), result.exitCode == 0 else {
            return [("fixture-did-not-list-its-cases", "LIST")]
        }
        return result.standardOutput.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t")
            return fields.count >= 2 ? (String(fields[0]), String(fields[1])) : nil
        }
    }()

    @Test(.timeLimit(.minutes(10)), arguments: brokenCases)
    func brokenHelperFailsThePathItMishandles(brokenCase: String, expectedLines: String) throws {
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "2", "--", "python3", Self.brokenFixture, "--break", brokenCase, "{group}",
        ], timeoutSeconds: 150)
        #expect(result.exitCode == 1, "\(result)")
        let expected = Set(expectedLines.split(separator: ",").map(String.init))
        #expect(CheckHelperTests.failedRules(result.standardOutput) == expected, "\(result)")
    }
}
