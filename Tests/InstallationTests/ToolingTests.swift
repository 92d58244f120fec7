import Foundation
import Testing
import TestSupport

/// The tools that say whether the suite passed cannot lie: tools/test-summary counts test cases
/// (not recorded issues) and fails a skip under LIVEPUSH_REQUIRE_ALL=1; tools/fuzz/run fails when
/// its target does not build instead of fuzzing the binary a previous build left.
@Suite(.timeLimit(.minutes(10))) struct ToolingTests {
    /// A JUnit file as Swift Testing writes it: `failures` counts issues, `tests` leaves skips out.
    static let junit = """
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuites>
          <testsuite name="TestResults" errors="0" tests="3" failures="3" skipped="1" time="1.0">
            <testcase classname="A.B" name="passes()" time="0.1" />
            <testcase classname="A.B" name="failsThreeExpectations()" time="0.1">
              <failure message="first" /><failure message="second" /><failure message="third" />
            </testcase>
            <testcase classname="A.B" name="alsoPasses()" time="0.1" />
            <testcase classname="A.C" name="isSkipped()" time="0.0"><skipped message="no X11" /></testcase>
          </testsuite>
        </testsuites>
        """

    @Test func summaryCountsTestCasesNotIssues() throws {
        let file = try write(Self.junit, "results.xml")
        let result = try ProcessRunner.run(Repository.path("tools/test-summary"), [file],
                                           environment: ["LIVEPUSH_REQUIRE_ALL": "0"])
        #expect(result.exitCode == 1)
        let lines = result.standardOutput.split(separator: "\n")
        #expect(lines.last == "2 passed, 1 failed, 1 skipped")
        #expect(lines.filter { $0.hasPrefix("FAILED A.B.failsThreeExpectations()") }.count == 3)
    }

    @Test func aSkipFailsTheRunUnderRequireAll() throws {
        let onlySkipAndPass = Self.junit.replacingOccurrences(
            of: "<failure message=\"first\" /><failure message=\"second\" /><failure message=\"third\" />", with: "")
        let file = try write(onlySkipAndPass, "skip.xml")
        let relaxed = try ProcessRunner.run(Repository.path("tools/test-summary"), [file],
                                            environment: ["LIVEPUSH_REQUIRE_ALL": "0"])
        #expect(relaxed.exitCode == 0, "\(relaxed)")
        #expect(relaxed.standardOutput.hasSuffix("3 passed, 0 failed, 1 skipped\n"))
        let strict = try ProcessRunner.run(Repository.path("tools/test-summary"), [file],
                                           environment: ["LIVEPUSH_REQUIRE_ALL": "1"])
        #expect(strict.exitCode == 1, "\(strict)")
        #expect(strict.standardOutput.contains("SKIPPED A.C.isSkipped(): LIVEPUSH_REQUIRE_ALL=1 allows no skip"))
    }

    @Test func noTestAndAMissingFileFail() throws {
        let empty = try write("<testsuites><testsuite name=\"TestResults\" tests=\"0\" /></testsuites>", "empty.xml")
        #expect(try ProcessRunner.run(Repository.path("tools/test-summary"), [empty]).exitCode == 1)
        let missing = try ProcessRunner.run(Repository.path("tools/test-summary"), ["/nonexistent/results.xml"])
        #expect(missing.exitCode == 1)
        #expect(missing.standardOutput.contains("cannot read /nonexistent/results.xml"))
    }

    @Test func fuzzRunFailsWhenItsTargetDoesNotBuildInsteadOfFuzzingAStaleBinary() throws {
        let directory = try temporaryDirectory("fuzz")
        // A binary a previous build left, and a swiftc that fails: the run must not use the former.
        let stale = directory.appendingPathComponent("capture-link-decoder").path
        try "#!/bin/sh\necho stale binary ran\nexit 0\n".write(toFile: stale, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: stale)
        let bin = directory.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let swiftc = bin.appendingPathComponent("swiftc").path
        try "#!/bin/sh\necho 'error: a compile error' >&2\nexit 1\n".write(toFile: swiftc, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: swiftc)
        let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try ProcessRunner.run(Repository.path("tools/fuzz/run"), ["1"],
                                           environment: ["PATH": path, "LIVEPUSH_FUZZ_OUT": directory.path])
        #expect(result.exitCode == 1, "\(result)")
        #expect(result.standardError.contains("fuzz: capture-link-decoder build failed (swiftc exited 1)"), "\(result)")
        #expect(!result.standardOutput.contains("stale binary ran") && !result.standardError.contains("stale binary ran"))
        #expect(!FileManager.default.fileExists(atPath: stale), "the stale binary was left in place")
    }

    private func temporaryDirectory(_ prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(prefix))
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    private func write(_ text: String, _ name: String) throws -> String {
        let file = try temporaryDirectory("summary").appendingPathComponent(name).path
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }
}
