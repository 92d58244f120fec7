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
        let result = try ProcessRunner.run(livepush, ["check-helper", "--seconds", "2", "--", helper, "{group}"],
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
            "check-helper", "--seconds", "2", "--", "python3", Repository.path("tools/examples/minimal_helper.py"),
            "{group}",
        ], environment: ["PYTHONPATH": site], timeoutSeconds: 60)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardOutput.contains("check-helper: all rules pass"), "\(result)")
        #expect(result.standardOutput.contains("HELLO: minimal-helper-py 1.0"), "\(result)")
    }
}
