import Foundation
import Testing
import TestSupport

/// A second local user tries to receive another user's screen (issue 30, attack 1): it makes the
/// victim's `/tmp/livepush-<uid>` before the victim does, or leads the victim's socket to a
/// listener of its own. The victim's `livepush-capture` must not say HELLO to it. Both users are
/// real (useradd), the listener is `Tests/Fixtures/foreign_pusher.py` run as the attacker, the
/// helper runs as the victim with XDG_RUNTIME_DIR unset, on the test's X display.
@Suite(.serialized, .enabled(if: (getuid() == 0 || TestEnvironment.requireAll) && TestEnvironment.isEnabled(.x11),
                             "needs root (useradd) and the test Xvfb"), .timeLimit(.minutes(10)))
struct HelperTrustTests {
    let helper = BuiltProducts.path("livepush-capture")

    /// A directory any user may write in, for the attacker's socket and log.
    private func sharedDirectory() throws -> String {
        let path = "/tmp/lp-trust-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        chmod(path, 0o1777)
        return path
    }

    private func waitForFile(_ path: String) -> Bool {
        waitUntil(timeoutSeconds: 10, intervalSeconds: 0.02) { FileManager.default.fileExists(atPath: path) }
    }

    /// Runs the victim's helper on group `default` with XDG_RUNTIME_DIR unset.
    private func runVictimHelper(_ victim: TemporaryUser) throws -> CommandResult {
        try ProcessRunner.run("setpriv", victim.arguments(helper, [
            "--group", "default", "--display", try TestEnvironment.display(), "--connect-timeout-ms", "2000",
        ]), timeoutSeconds: 30)
    }

    /// A victim and an attacker (fresh users), a directory both may write in, and the victim's
    /// `/tmp/livepush-<uid>` path; all removed after `body`.
    private func withUsers(_ body: (_ victim: TemporaryUser, _ attacker: TemporaryUser, _ shared: String,
                                    _ directory: String) throws -> Void) throws {
        let victim = try TemporaryUser.create("victim"), attacker = try TemporaryUser.create("attacker")
        let shared = try sharedDirectory()
        let directory = "/tmp/livepush-\(victim.uid)"
        defer {
            victim.remove()
            attacker.remove()
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: shared)
        }
        try body(victim, attacker, shared, directory)
    }

    @Test func theHelperRefusesASocketDirectoryAnotherUserMadeAndSendsItNothing() throws {
        try withUsers { victim, attacker, shared, directory in
            let log = shared + "/listener.log"
            let listener = try ProcessRunner.start("setpriv", attacker.arguments("python3", [
                Repository.path("Tests/Fixtures/foreign_pusher.py"), "--make-dir", "755", directory + "/default.sock", log,
            ]))
            defer {
                if listener.isRunning { kill(listener.processIdentifier, SIGKILL) }
                _ = listener.finish()
            }
            #expect(waitForFile(directory + "/default.sock"), "the attacker's listener did not start: \(listener.errorSoFar)")

            let result = try runVictimHelper(victim)
            let seen = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(!seen.contains("hello=1"), "the helper said HELLO to another user's listener:\n\(seen)")
            #expect(!seen.contains("accepted"), "the helper connected to another user's socket:\n\(seen)")
            #expect(result.exitCode != 0, "\(result)")
            #expect(result.standardError.contains("refusing to use '\(directory)': owned by uid \(attacker.uid), "
                + "not by this user (\(victim.uid))"), "\(result)")
            #expect(!result.timedOut, "\(result)")
        }
    }

    @Test func theHelperRefusesAPusherOfAnotherUserInItsOwnPrivateDirectory() throws {
        try withUsers { victim, attacker, shared, directory in
            // The victim's own private directory, in which its socket leads to the attacker's listener.
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            chown(directory, victim.uid, gid_t(victim.uid == 0 ? 0 : getpwuid(victim.uid).pointee.pw_gid))
            chmod(directory, 0o700)
            let log = shared + "/listener.log", socketPath = shared + "/attacker/default.sock"
            let listener = try ProcessRunner.start("setpriv", attacker.arguments("python3", [
                Repository.path("Tests/Fixtures/foreign_pusher.py"), "--make-dir", "755", socketPath, log,
            ]))
            defer {
                if listener.isRunning { kill(listener.processIdentifier, SIGKILL) }
                _ = listener.finish()
            }
            #expect(waitForFile(socketPath), "the attacker's listener did not start: \(listener.errorSoFar)")
            #expect(symlink(socketPath, directory + "/default.sock") == 0)

            let result = try runVictimHelper(victim)
            let seen = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(!seen.contains("hello=1"), "the helper said HELLO to another user's pusher:\n\(seen)")
            #expect(result.exitCode != 0, "\(result)")
            #expect(result.standardError.contains("the process serving '\(directory)/default.sock' (pid ")
                && result.standardError.contains("runs as uid \(attacker.uid), not as this helper's user (\(victim.uid))"),
                    "\(result)")
            #expect(!result.timedOut, "\(result)")
        }
    }
}
