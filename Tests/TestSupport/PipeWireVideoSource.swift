import Foundation

/// A real PipeWire video producer on the test environment's daemon, compiled once per test process
/// and driven through stdin: tools/testclients/pw-video-source.c (a screen-like Video/Source with
/// cursor and damage metadata), or with `program: .camera` tools/testclients/pw-camera-source.c (a
/// camera: the Camera role, YUY2, MJPEG, NV12 and I420 modes).
public final class PipeWireVideoSource: @unchecked Sendable {
    /// Which test client produces the pictures.
    public enum Program: Sendable {
        case screen
        case camera

        var file: String { self == .screen ? "pw-video-source" : "pw-camera-source" }
        /// Libraries beyond libpipewire (the camera encodes its MJPEG frames with libjpeg-turbo).
        var libraries: [String] { self == .screen ? [] : ["-ljpeg"] }
    }

    public let name: String
    public let nodeID: UInt32
    public let process: RunningCommand

    /// Starts a producer named `name` with `arguments` (see the C file's header) and waits until
    /// its node exists; on the test daemon, or on the one whose socket is `daemonSocket`. With
    /// `runner` (a command that runs its arguments, as the Wayland desktop's `as-user`), through it.
    public init(name: String? = nil, _ arguments: [String], program: Program = .screen, daemonSocket: String? = nil,
                runner: String? = nil) throws
    {
        let name = name ?? UniqueName.make(program == .screen ? "lp-video" : "lp-camera")
        self.name = name
        let executable = try Self.executable(program)
        if let runner {
            process = try ProcessRunner.start(runner, [executable, "--name", name] + arguments, interactive: true)
        } else {
            let environment = try daemonSocket.map { ["PIPEWIRE_REMOTE": $0] } ?? Self.environment()
            process = try ProcessRunner.start(executable, ["--name", name] + arguments, environment: environment,
                                              interactive: true)
        }
        guard let line = process.waitForLine(startingWith: "node "), let id = UInt32(line.dropFirst(5)) else {
            process.closeInput()
            process.interrupt()
            throw Failed(what: "\(program.file) did not announce its node: \(process.finish())")
        }
        nodeID = id
    }

    public struct Failed: Error, CustomStringConvertible {
        public let what: String
        public var description: String { what }
    }

    /// Sends a command ("color RRGGBB", "resize W H", "corrupt N", "cursor X Y", "quit").
    public func send(_ command: String) { process.send(line: command) }

    /// Waits for the producer to print a line starting with `prefix` after a command.
    public func waitForLine(startingWith prefix: String, timeoutSeconds: Double = 10) -> String? {
        process.waitForLine(startingWith: prefix, timeoutSeconds: timeoutSeconds)
    }

    /// Stops the producer (its node goes away) and waits for it to exit.
    @discardableResult
    public func stop() -> CommandResult {
        send("quit")
        process.closeInput()
        return process.finish()
    }

    /// Kills the producer (SIGKILL: a camera unplugged, its program crashed) and waits for its end.
    @discardableResult
    public func kill() -> CommandResult {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.closeInput()
        return process.finish()
    }

    /// The PipeWire daemon's socket, as an absolute path that holds whatever XDG_RUNTIME_DIR a
    /// process gets (helpers run with private runtime directories for their rendezvous).
    public static func daemonSocket() throws -> String {
        try TestEnvironment.value("XDG_RUNTIME_DIR", of: .pipewire) + "/pipewire-0"
    }

    /// Variables that point a process at the test daemon.
    public static func environment() throws -> [String: String] { ["PIPEWIRE_REMOTE": try daemonSocket()] }

    private static let builds = [Program.screen: Build(.screen), Program.camera: Build(.camera)]

    /// The compiled producer.
    public static func executable(_ program: Program = .screen) throws -> String { try builds[program]!.path() }

    private final class Build: @unchecked Sendable {
        private let program: Program
        private let lock = NSLock()
        private var result: Result<String, Error>?

        init(_ program: Program) { self.program = program }

        func path() throws -> String {
            lock.lock()
            defer { lock.unlock() }
            if let result { return try result.get() }
            let file = program.file, libraries = program.libraries
            let made = Result { () throws -> String in
                let flags = try ProcessRunner.run("pkg-config", ["--cflags", "--libs", "libpipewire-0.3"])
                guard flags.exitCode == 0 else { throw Failed(what: "pkg-config libpipewire-0.3: \(flags)") }
                let output = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(file)).path
                let compile = try ProcessRunner.run("cc", ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2",
                                                           Repository.path("tools/testclients/\(file).c"), "-o", output]
                    + flags.standardOutput.split(whereSeparator: \.isWhitespace).map(String.init) + libraries)
                guard compile.exitCode == 0 else { throw Failed(what: "cc \(file).c: \(compile)") }
                return output
            }
            result = made
            return try made.get()
        }
    }
}

/// The mock ScreenCast portal (Tests/Fixtures/mock_screencast_portal.py) on the test session bus.
public final class MockScreenCastPortal: @unchecked Sendable {
    public let process: RunningCommand
    public let logPath: String

    /// `cursorModes` and `sourceTypes` are the bit masks it advertises (AvailableCursorModes,
    /// AvailableSourceTypes); SelectSources refuses anything else, as the real portal does.
    public init(nodeID: UInt32, startResponse: Int = 0, tokenPrefix: String = "token", cursorModes: Int = 7,
                sourceTypes: Int = 3) throws
    {
        _ = try TestEnvironment.value("DBUS_SESSION_BUS_ADDRESS", of: .pipewire)
        logPath = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("portal")).path + ".log"
        process = try ProcessRunner.start("/usr/bin/python3", [
            Repository.path("Tests/Fixtures/mock_screencast_portal.py"), "--node", String(nodeID),
            "--start-response", String(startResponse), "--token-prefix", tokenPrefix, "--log", logPath,
            "--pipewire-socket", try PipeWireVideoSource.daemonSocket(), "--cursor-modes", String(cursorModes),
            "--source-types", String(sourceTypes),
        ])
        guard process.waitForLine(startingWith: "ready") != nil else {
            throw PipeWireVideoSource.Failed(what: "the mock portal did not start: \(process.finish())")
        }
    }

    /// The calls it received, in order: (method, options as JSON text).
    public var calls: [(method: String, options: [String: Any])] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let method = object["method"] as? String
            else { return nil }
            return (method, object["options"] as? [String: Any] ?? [:])
        }
    }

    public func stop() {
        // SIGTERM: SIGINT may be ignored in processes the test runner starts.
        process.process.terminate()
        _ = process.finish()
        try? FileManager.default.removeItem(atPath: logPath)
    }
}
