import Foundation
import Testing
import TestSupport

/// liblivepush-capture as a helper author meets it: `make install-lib` into a private prefix,
/// the minimal helper built with `pkg-config --cflags --libs livepush-capture` from there, and
/// check-helper grading it. The library and the helper are built under AddressSanitizer and
/// UndefinedBehaviorSanitizer (-fno-sanitize-recover): any finding ends the helper with a
/// non-zero status, which check-helper reports as a failed `exit` rule.
@Suite(.serialized, .timeLimit(.minutes(10))) struct HelperLibraryTests {
    let livepush = BuiltProducts.path("livepush")
    static let sanitizers = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

    /// A private prefix with the library installed by `make install-lib`; removed by the caller.
    static func installLibrary() throws -> String {
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("lpc-prefix")).path
        let make = try ProcessRunner.run("make", [
            "-s", "-C", Repository.root.path, "install-lib", "PREFIX=\(prefix)", "LIB_DIR=\(prefix)/build",
            "LIB_CFLAGS=\(sanitizers)",
        ], timeoutSeconds: 120)
        try #require(make.exitCode == 0, "\(make)")
        return prefix
    }

    /// Builds a C program against the installed library the way its documentation says.
    static func buildAgainstInstalled(_ source: String, prefix: String) throws -> String {
        let flags = try ProcessRunner.run("pkg-config", ["--cflags", "--libs", "livepush-capture"],
                                          environment: ["PKG_CONFIG_PATH": "\(prefix)/lib/pkgconfig"])
        try #require(flags.exitCode == 0, "\(flags)")
        #expect(flags.standardOutput.contains("-llivepush-capture"), "\(flags)")
        let output = "\(prefix)/" + URL(fileURLWithPath: source).deletingPathExtension().lastPathComponent
        let compile = try ProcessRunner.run("cc", [
            "-std=c11", "-Wall", "-Wextra", "-Werror", Repository.path(source), "-o", output, "-Wl,-rpath,\(prefix)/lib",
        ] + sanitizers.split(separator: " ").map(String.init)
          + flags.standardOutput.split(whereSeparator: \.isWhitespace).map(String.init))
        try #require(compile.exitCode == 0, "\(compile)")
        return output
    }

    /// `helper` with the arguments of `livepush check-helper --help`'s example (`./my-helper --group
    /// {group}`), read from the help itself so that the test follows what users are shown.
    static func helpForm(_ helper: String) throws -> [String] {
        let help = try ProcessRunner.run(BuiltProducts.path("livepush"), ["check-helper", "--help"])
        let example = try #require(help.standardOutput.split(separator: "\n").first { $0.contains("./my-helper") },
                                   "no example in check-helper --help: \(help)")
        let words = example.split(separator: " ").map(String.init)
        let index = try #require(words.firstIndex(of: "./my-helper"))
        let arguments = Array(words[(index + 1)...])
        #expect(arguments == ["--group", "{group}"], "check-helper --help shows \(example)")
        return [helper] + arguments
    }

    @Test(.timeLimit(.minutes(10)))
    func installedLibraryHasAVersionedSonameAndItsHeaders() throws {
        let prefix = try Self.installLibrary()
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: "\(prefix)/lib/liblivepush-capture.so")
        #expect(link == "liblivepush-capture.so.1")
        let dynamic = try ProcessRunner.run("readelf", ["-d", "\(prefix)/lib/liblivepush-capture.so.1.0.0"])
        #expect(dynamic.standardOutput.contains("Library soname: [liblivepush-capture.so.1]"), "\(dynamic)")
        for header in ["livepush_capture.h", "livepush_capture_helper.h"] {
            #expect(FileManager.default.fileExists(atPath: "\(prefix)/include/\(header)"), "\(header)")
        }
        // Only the API is exported: the parser and session internals stay hidden.
        let symbols = try ProcessRunner.run("nm", ["-D", "--defined-only", "\(prefix)/lib/liblivepush-capture.so.1"])
        let exported = symbols.standardOutput.split(separator: "\n").compactMap { $0.split(separator: " ").last }
            .filter { $0.hasPrefix("lpc") }
        #expect(exported.contains("lpc_helper_connect") && exported.contains("lpc_helper_submit"), "\(exported)")
        #expect(exported.allSatisfy { !$0.hasPrefix("lpc__") && !$0.hasPrefix("lpc_wire") }, "\(exported)")
    }

    @Test(.timeLimit(.minutes(10)))
    func minimalHelperBuiltAgainstTheInstalledLibraryPassesCheckHelper() throws {
        let source = try String(contentsOfFile: Repository.path("tools/examples/minimal-helper.c"), encoding: .utf8)
        #expect(source.split(separator: "\n", omittingEmptySubsequences: false).count <= 60)
        let prefix = try Self.installLibrary()
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let helper = try Self.buildAgainstInstalled("tools/examples/minimal-helper.c", prefix: prefix)
        // The form `check-helper --help` shows (SPEC §3.6): the group after --group.
        let result = try ProcessRunner.run(livepush, ["check-helper", "--seconds", "2", "--"] + Self.helpForm(helper),
                                           environment: ["ASAN_OPTIONS": "detect_leaks=1"], timeoutSeconds: 60)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardOutput.contains("check-helper: all rules pass"), "\(result)")
        #expect(result.standardOutput.contains("pass  exit: the helper exited with status 0"), "\(result)")
        #expect(!result.standardError.contains("Sanitizer"), "\(result)")
        #expect(!result.standardError.contains("runtime error"), "\(result)")
    }

    @Test(.timeLimit(.minutes(10)))
    func pythonPackageInstalledWithPipRunsTheMinimalHelperThroughCheckHelper() throws {
        let source = try String(contentsOfFile: Repository.path("tools/examples/minimal_helper.py"), encoding: .utf8)
        #expect(source.split(separator: "\n", omittingEmptySubsequences: false).count <= 41)  // 40 lines + final newline
        let site = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("lpc-site")).path
        defer { try? FileManager.default.removeItem(atPath: site) }
        let pip = try ProcessRunner.run("python3", [
            "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check", "--target", site,
            Repository.path("protocol/python"),
        ], timeoutSeconds: 120)
        try #require(pip.exitCode == 0, "\(pip)")
        #expect(FileManager.default.fileExists(atPath: "\(site)/livepush_capture/_session.py"))
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "2", "--", "python3",
        ] + Self.helpForm(Repository.path("tools/examples/minimal_helper.py")),
            environment: ["PYTHONPATH": site], timeoutSeconds: 60)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardOutput.contains("check-helper: all rules pass"), "\(result)")
        #expect(result.standardOutput.contains("HELLO: minimal-helper-py 1.0"), "\(result)")
    }

    /// What the library must refuse or get right (issue 29), in a helper built against the installed
    /// library (Tests/Fixtures/library-checks.c) run under check-helper with a maximum of another
    /// shape than its 640x360 source: a FRAME or AUDIO pts_ns that goes back is refused, named and
    /// not sent (before, the pusher answered ERROR SEQUENCE or AUDIO); a failed layout leaves the
    /// frame as it was and says why; with LPC_CAP_SCALE every size sent keeps the source's aspect
    /// (before, WELCOME's 640x240 was sent as it was, the picture squashed).
    @Test(.timeLimit(.minutes(10)))
    func theLibraryRefusesBackwardTimestampsKeepsTheAspectAndLeavesAFailedLayoutAlone() throws {
        let prefix = try Self.installLibrary()
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let helper = try Self.buildAgainstInstalled("Tests/Fixtures/library-checks.c", prefix: prefix)
        let report = prefix + "/checks.txt"
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "3", "--max-size", "640x240", "--", helper, "--group", "{group}", "--report", report,
        ], timeoutSeconds: 120)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardOutput.contains("check-helper: all rules pass"), "\(result)")
        try Self.requireChecks(report, expected: ["group-from-args", "layout-unchanged", "layout-too-large",
                                                  "helper-layout", "frame-pts-backwards", "frame-after-refusal",
                                                  "audio-pts-backwards"])
    }

    /// The same checks of the Python package (Tests/Fixtures/library_checks.py).
    @Test(.timeLimit(.minutes(10)))
    func thePythonPackageRefusesBackwardTimestampsKeepsTheAspectAndLeavesAFailedLayoutAlone() throws {
        let report = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("lpc-py")).path
        defer { try? FileManager.default.removeItem(atPath: report) }
        let result = try ProcessRunner.run(livepush, [
            "check-helper", "--seconds", "4", "--no-paths", "--max-size", "640x240", "--", "python3",
            Repository.path("Tests/Fixtures/library_checks.py"), "--group", "{group}", "--report", report,
        ], environment: ["PYTHONPATH": Repository.path("protocol/python")], timeoutSeconds: 120)
        #expect(result.exitCode == 0, "\(result)")
        try Self.requireChecks(report, expected: ["group-from-args", "layout-unchanged", "frame-pts-backwards",
                                                  "audio-pts-backwards"])
    }

    /// Each named check passed (in every session of the helper) and every size sent kept 640x360's aspect.
    static func requireChecks(_ report: String, expected: [String]) throws {
        let lines = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.hasPrefix("FAIL") }, "\(lines.filter { $0.hasPrefix("FAIL") })")
        for name in expected { #expect(lines.contains { $0.hasPrefix("ok \(name):") }, "no '\(name)' check passed: \(lines)") }
        let sizes = lines.filter { $0.hasPrefix("size ") }.compactMap { line -> (Int, Int)? in
            let parts = line.dropFirst(5).split(separator: "x").compactMap { Int($0) }
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }
        #expect(!sizes.isEmpty, "no frame size reported: \(lines)")
        for (width, height) in sizes {
            #expect(abs(width * 360 - height * 640) <= 640, "\(width)x\(height) is not 640x360's shape")
        }
    }

    /// A helper written from the guide alone (docs/helpers.md sections 4 and 5: the C and the Python
    /// helper without the library, put together from the page's code blocks in order) passes every
    /// rule and path of check-helper in the form its --help shows.
    @Test(.timeLimit(.minutes(10)), arguments: ["c", "python"])
    func aHelperWrittenFromTheGuidePassesCheckHelper(language: String) throws {
        let guide = try String(contentsOfFile: Repository.path("docs/helpers.md"), encoding: .utf8)
        let (start, end, fence) = language == "c"
            ? ("## 4. A helper in C", "## 5. A helper in Python", "```c\n")
            : ("## 5. A helper in Python", "## 6. Going further", "```python\n")
        let section = try #require(guide.range(of: start).flatMap { from in
            guide.range(of: end, range: from.upperBound..<guide.endIndex).map { guide[from.upperBound..<$0.lowerBound] }
        }, "no section '\(start)' in docs/helpers.md")
        let blocks = section.components(separatedBy: fence).dropFirst().compactMap { $0.components(separatedBy: "```").first }
        #expect(blocks.count >= 5, "\(blocks.count) code blocks in '\(start)'")
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("guide")).path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = work + (language == "c" ? "/tiny-helper.c" : "/tiny_helper.py")
        try blocks.joined(separator: "\n").write(toFile: source, atomically: true, encoding: .utf8)
        var command = ["python3", source]
        if language == "c" {
            let compile = try ProcessRunner.run("cc", ["-std=c11", "-Wall", "-Wextra", "-Werror", "-I",
                                                       Repository.path("protocol"), source, "-o", work + "/tiny-helper"])
            try #require(compile.exitCode == 0, "\(compile)")
            command = [work + "/tiny-helper"]
        }
        let form = try Self.helpForm(command.removeLast())
        let result = try ProcessRunner.run(livepush, ["check-helper", "--seconds", "3", "--"] + command + form,
                                           timeoutSeconds: 150)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardOutput.contains("check-helper: all rules pass"), "\(result)")
        for line in CheckHelperTests.pathLines { #expect(result.standardOutput.contains(line), "\(line)\n\(result)") }
    }

    /// The package's connect() with no pusher raises its documented error, ConnectError (an Error
    /// with status LPC_E_CONNECT), and the guide's first Python example (docs/helpers.md, section
    /// B) turns it into one line and exit status 1, not a traceback.
    @Test(.timeLimit(.minutes(10)))
    func withNoPusherThePythonPackageRaisesConnectErrorAndTheGuidesExampleSaysSo() throws {
        let runtime = privateRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let environment = ["PYTHONPATH": Repository.path("protocol/python"), "XDG_RUNTIME_DIR": runtime]
        let direct = try ProcessRunner.run("python3", ["-c", """
            import livepush_capture as lpc
            try:
                lpc.connect('nobody-listens', connect_retry_ms=300)
            except lpc.ConnectError as error:
                print(error.status == lpc.LPC_E_CONNECT, isinstance(error, lpc.Error), error)
            """], environment: environment)
        #expect(direct.exitCode == 0 && direct.standardOutput.hasPrefix("True True no pusher for group 'nobody-listens'"),
                "\(direct)")
        let guide = try String(contentsOfFile: Repository.path("docs/helpers.md"), encoding: .utf8)
        let section = try #require(guide.components(separatedBy: "## B. ").dropFirst().first)
        let example = try #require(section.components(separatedBy: "```python\n").dropFirst().first?
            .components(separatedBy: "```").first, "no Python example in section B")
        let script = runtime + "/example.py"
        try example.write(toFile: script, atomically: true, encoding: .utf8)
        let run = try ProcessRunner.run("python3", [script, "--group", "nobody-listens"], environment: environment,
                                        timeoutSeconds: 60)
        #expect(run.exitCode == 1, "\(run)")
        #expect(!run.standardError.contains("Traceback"), "\(run)")
        #expect(run.standardError.hasPrefix("minimal-helper-py: no pusher for group 'nobody-listens'"), "\(run)")
    }
}
