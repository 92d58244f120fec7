import Control
import Foundation
import LivePush
import Testing
import TestSupport

/// The control socket itself, on a pusher that is not capturing: who may connect, what a broken
/// client gets, and that nothing it sends changes the pusher.
@Suite(.timeLimit(.minutes(10))) struct ControlServerTests {
    private func server() throws -> (ControlServer, LivePusher, String) {
        let runtime = privateRuntimeDirectory()
        let pusher = try LivePusher(config: LivePushConfig())
        let name = UniqueName.make("srv")
        let server = try ControlServer(name: name, runtimeDirectory: runtime, handler: ControlHandler(pusher: pusher, hub: nil))
        server.start()
        return (server, pusher, runtime)
    }

    /// Runs Python (standard library) as `uid` against the socket; its stdout.
    private func client(_ path: String, uid: Int? = nil, send payload: String, lines: Int) throws -> CommandResult {
        let become = uid.map { "os.setgid(\($0)); os.setuid(\($0))\n" } ?? ""
        return try ProcessRunner.run("python3", ["-c", """
            import os, socket, sys
            \(become)s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            if sys.argv[2]: s.sendall(sys.argv[2].encode())
            f = s.makefile()
            for _ in range(\(lines)): print(f.readline().strip())
            """, path, payload])
    }

    @Test(.enabled(if: getuid() == 0 || TestEnvironment.requireAll, "needs root to connect as another user"))
    func anotherUsersProcessIsRefusedByItsUidBeforeItCanAskAnything() throws {
        let (server, _, runtime) = try server()
        defer { server.stop() }
        // Let another user reach the socket (the directory is 0700 and the socket 0600 otherwise):
        // then the peer-credential check is what stops it.
        chmod(runtime, 0o711)
        chmod(runtime + "/livepush", 0o711)
        chmod(server.path, 0o666)
        // The refusal comes at once, before any request (which could not be written after it).
        let result = try client(server.path, uid: 65534, send: "", lines: 1)
        #expect(result.standardOutput.contains("\"code\":-1509"), "\(result)")
        #expect(result.standardOutput.contains("refused a control connection from uid 65534"), "\(result)")
    }

    @Test func garbageGetsAnErrorLineAndTheConnectionGoesOn() throws {
        let (server, pusher, _) = try server()
        defer { server.stop() }
        let result = try client(server.path, send: "{\"command\":\n[1,2]\n{\"command\":\"pause\",\"args\":{}}\n"
            + "{\"command\":\"status\"}\n", lines: 4)
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(result)")
        #expect(lines.prefix(3).allSatisfy { $0.contains("\"code\":-1503") }, "\(lines)")
        #expect(lines.last?.hasPrefix("{\"command\":\"status\",\"ok\":true") == true, "\(lines)")
        #expect(!pusher.status.paused, "a request that was refused changed nothing")
    }

    @Test func aLineLongerThan64KiBIsRefusedAndTheConnectionClosed() throws {
        let (server, _, _) = try server()
        defer { server.stop() }
        let result = try client(server.path, send: String(repeating: "x", count: 70_000), lines: 2)
        let lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first?.contains("a line longer than 64 KiB") == true, "\(result)")
        #expect(lines.dropFirst().first == "", "then the end of the stream")
    }

    @Test func aSecondServerOfTheSameNameIsRefusedAndTheSocketGoesAtStop() throws {
        let (server, pusher, runtime) = try server()
        #expect(throws: ControlError.self) {
            try ControlServer(name: server.name, runtimeDirectory: runtime, handler: ControlHandler(pusher: pusher, hub: nil))
        }
        let mode = try FileManager.default.attributesOfItem(atPath: server.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: server.path))
    }
}
