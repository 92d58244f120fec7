import Foundation

/// Paths inside this repository, for tests that build or run its tools and examples.
public enum Repository {
    /// The repository's root directory (found from this source file's location).
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    /// Compiles the C reference helper with `cc` against protocol/ alone, once per test process.
    public static func cPatternHelper() throws -> String {
        try CPatternHelperBuild.shared.path()
    }
}

private final class CPatternHelperBuild: @unchecked Sendable {
    static let shared = CPatternHelperBuild()
    private let lock = NSLock()
    private var built: Result<String, Error>?

    struct CompileFailed: Error, CustomStringConvertible {
        let result: CommandResult
        var description: String { "cc could not build tools/examples/pattern-helper.c: \(result)" }
    }

    func path() throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let built { return try built.get() }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("pattern-helper")).path
        let result = Result { () throws -> String in
            let compile = try ProcessRunner.run("cc", [
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-I", Repository.path("protocol"),
                Repository.path("tools/examples/pattern-helper.c"), "-o", output,
            ])
            guard compile.exitCode == 0 else { throw CompileFailed(result: compile) }
            return output
        }
        built = result
        return try result.get()
    }
}
