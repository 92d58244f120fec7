import Foundation

/// A real second (or third) local user, made with `useradd --system` for one test and removed by
/// `remove()`: an attacker on the same machine, or a victim whose uid no other run shares (so that
/// `/tmp/livepush-<uid>` is this test's alone). Needs root; commands run as the user through
/// `setpriv` with a clean environment (`env -i`), as a login would give them.
public struct TemporaryUser: Sendable {
    public let name: String
    public let uid: UInt32

    /// Why a user could not be made.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A new system user `lp<role><random>` with its own group, no home and no login shell.
    public static func create(_ role: String) throws -> TemporaryUser {
        guard getuid() == 0 else { throw Failure(description: "making a second user needs root (useradd)") }
        let name = "lp\(role.prefix(10))\(UInt32.random(in: 0...UInt32.max) % 1_000_000)"
        var last: CommandResult?
        // useradd refuses while another holds /etc/passwd's lock (exit 10): try again a few times.
        for _ in 0..<20 {
            let made = try ProcessRunner.run("useradd", ["--system", "--user-group", "--no-create-home",
                                                         "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name])
            last = made
            if made.exitCode == 0 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        guard last?.exitCode == 0, let entry = getpwnam(name) else {
            throw Failure(description: "useradd \(name) failed: \(last.map { "\($0)" } ?? "")")
        }
        return TemporaryUser(name: name, uid: entry.pointee.pw_uid)
    }

    /// Removes the user and its group (userdel; retried while /etc/passwd is locked).
    public func remove() {
        for _ in 0..<20 {
            if (try? ProcessRunner.run("userdel", [name]))?.exitCode == 0 { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    /// The command line that runs `executable arguments` as this user with only `environment`
    /// (and a PATH): give it to `ProcessRunner.run("setpriv", ...)`.
    public func arguments(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) -> [String] {
        let variables = ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/nonexistent"]
            + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return ["--reuid=\(name)", "--regid=\(name)", "--init-groups", "env", "-i"] + variables + [executable] + arguments
    }
}
