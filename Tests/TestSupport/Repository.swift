import Foundation

/// Paths inside this repository, for tests that build or run its tools and examples.
public enum Repository {
    /// The repository's root directory (found from this source file's location).
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    /// The sources of liblivepush-capture (protocol/lib/), for programs built with the library's code.
    public static let helperLibrarySources = ["lpc_wire.c", "lpc_helper.c", "lpc_connect.c"].map {
        Repository.path("protocol/lib/" + $0)
    }

    /// Compiles the C reference helper with `cc` against protocol/ alone (its headers and the
    /// sources of liblivepush-capture), once per test process.
    public static func cPatternHelper() throws -> String {
        try CProgramBuilds.shared.path(source: "tools/examples/pattern-helper.c",
                                       flags: ["-I", Repository.path("protocol")] + helperLibrarySources)
    }

    /// Compiles the colour-bars helper fixture (Tests/Fixtures/colour-bars-helper.c) on liblivepush-capture.
    public static func colourBarsHelper() throws -> String {
        try CProgramBuilds.shared.path(source: "Tests/Fixtures/colour-bars-helper.c",
                                       flags: ["-I", Repository.path("protocol")] + helperLibrarySources)
    }

    /// Compiles the X11 test client that paints known pixels (tools/testclients/x11-paint.c).
    public static func x11Painter() throws -> String {
        try CProgramBuilds.shared.path(source: "tools/testclients/x11-paint.c", flags: [], libraries: ["-lxcb"])
    }

    /// Compiles the fixture that closes a window as a window manager's close button would
    /// (Tests/Fixtures/wm-close.c: WM_DELETE_WINDOW).
    public static func windowCloser() throws -> String {
        try CProgramBuilds.shared.path(source: "Tests/Fixtures/wm-close.c", flags: [], libraries: ["-lxcb"])
    }
}

/// C programs of the repository, compiled once per test process.
private final class CProgramBuilds: @unchecked Sendable {
    static let shared = CProgramBuilds()
    private let lock = NSLock()
    private var built: [String: Result<String, Error>] = [:]

    struct CompileFailed: Error, CustomStringConvertible {
        let source: String
        let result: CommandResult
        var description: String { "cc could not build \(source): \(result)" }
    }

    func path(source: String, flags: [String], libraries: [String] = []) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let result = built[source] { return try result.get() }
        let name = URL(fileURLWithPath: source).deletingPathExtension().lastPathComponent
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(name)).path
        let result = Result { () throws -> String in
            let compile = try ProcessRunner.run("cc", ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"] + flags
                + [Repository.path(source), "-o", output] + libraries)
            guard compile.exitCode == 0 else { throw CompileFailed(source: source, result: compile) }
            return output
        }
        built[source] = result
        return try result.get()
    }
}
