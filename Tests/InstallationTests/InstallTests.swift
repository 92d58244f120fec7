import Foundation
import Testing
import TestSupport

/// `make install-files` (what `make install` and `make deb` run) puts every file where Debian's
/// tools look for it, and the user service is one systemd accepts. Serialized: both tests build
/// liblivepush-capture in its one build directory (`make install-lib`).
@Suite(.serialized, .timeLimit(.minutes(10))) struct InstallTests {
    /// Issue 36: the Debian package installs at most 45 MiB (it was 113).
    static let installedLimitKiB = 45 * 1024

    @Test func installPutsExecutablesManPagesCompletionsServiceAndDocsInPlace() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("install")).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let built = URL(fileURLWithPath: BuiltProducts.path("livepush")).deletingLastPathComponent().path
        let make = try ProcessRunner.run("make", ["--no-print-directory", "-C", Repository.path(""), "install-lib", "install-files",
                                                  "DESTDIR=\(root)", "PREFIX=/usr", "RELEASE_BIN=\(built)"],
                                         timeoutSeconds: 60)
        try #require(make.exitCode == 0, "\(make)")
        for file in ["bin/livepush", "bin/livepush-capture", "share/man/man1/livepush.1", "share/man/man1/livepush-capture.1",
                     "share/bash-completion/completions/livepush", "share/bash-completion/completions/livepush-capture",
                     "share/zsh/vendor-completions/_livepush", "share/zsh/vendor-completions/_livepush-capture",
                     "lib/systemd/user/livepush@.service", "include/livepush_capture.h",
                     "include/livepush_capture_helper.h", "lib/liblivepush-capture.so.1", "lib/liblivepush-capture.so",
                     "lib/pkgconfig/livepush-capture.pc", "share/doc/livepush/guide.md", "share/doc/livepush/SPEC.md",
                     "bin/LivePush_Dashboard.resources"] {
            #expect(FileManager.default.fileExists(atPath: "\(root)/usr/\(file)"), "make install-files left out /usr/\(file)")
        }
        let bash = try ProcessRunner.run("bash", ["-n", "\(root)/usr/share/bash-completion/completions/livepush"])
        #expect(bash.exitCode == 0, "\(bash)")
        let zsh = try ProcessRunner.run("zsh", ["-n", "\(root)/usr/share/zsh/vendor-completions/_livepush"])
        #expect(zsh.exitCode == 0, "\(zsh)")

        // systemd's own checker, on an instance of the unit whose ExecStart points into the staging root.
        let unit = try String(contentsOfFile: "\(root)/usr/lib/systemd/user/livepush@.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/livepush push --group %i --url-file %E/livepush/%i.urls"))
        let units = "\(root)/units"
        let runtime = "\(root)/runtime"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try unit.replacingOccurrences(of: "/usr/bin/livepush", with: "\(root)/usr/bin/livepush")
            .write(toFile: "\(units)/livepush@desk.service", atomically: true, encoding: .utf8)
        let verify = try ProcessRunner.run("systemd-analyze", ["verify", "--user", "\(units)/livepush@desk.service"],
                                           environment: ["XDG_RUNTIME_DIR": runtime, "MANPATH": "\(root)/usr/share/man"])
        #expect(verify.exitCode == 0 && verify.standardError.isEmpty, "\(verify)")
    }

    /// What `make deb` installs, laid out by tools/package/stage (which build-deb uses) from the release
    /// executables that `make test` builds first (the pusher with ICU's data for root and English only,
    /// the helper without Foundation: PackageSizeTests).
    @Test func thePackageInstallsAtMost45MiB() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("stage")).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let releaseDirectory = URL(fileURLWithPath: try ReleaseLinkTests.releaseExecutable("livepush")).deletingLastPathComponent().path
        let stage = try ProcessRunner.run(Repository.path("tools/package/stage"), [root, releaseDirectory], timeoutSeconds: 120)
        try #require(stage.exitCode == 0, "\(stage)")
        let line = try #require(stage.standardOutput.split(separator: "\n").first { $0.hasPrefix("package installed_kib=") },
                                "\(stage)")
        let fields = Dictionary(uniqueKeysWithValues: line.split(separator: " ").dropFirst().map {
            let pair = $0.split(separator: "=", maxSplits: 1)
            return (String(pair[0]), Int(pair[1]) ?? -1)
        })
        let installedKiB = try #require(fields["installed_kib"])
        let executablesKiB = try #require(fields["executables_kib"])
        #expect(installedKiB > 0 && installedKiB <= Self.installedLimitKiB, "\(line)")
        #expect(executablesKiB > 0 && executablesKiB < installedKiB, "\(line)")
        for file in ["bin/livepush", "bin/livepush-capture", "share/man/man1/livepush.1.gz", "share/doc/livepush/copyright"] {
            #expect(FileManager.default.fileExists(atPath: "\(root)/usr/\(file)"), "tools/package/stage left out /usr/\(file)")
        }
    }
}
