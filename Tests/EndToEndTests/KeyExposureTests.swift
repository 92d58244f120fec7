import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// Where else a stream key could leak (issue 30, attack 6): `--print-config`, the helper's
    /// environment, the pusher's memory to another process of its user, files that hold keys at a
    /// mode others can read, and reports and snapshots others can read.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct KeyExposureTests {
        let livepush = BuiltProducts.path("livepush")

        private func temporary(_ name: String) -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(name)).path
        }

        private func write(_ text: String, to path: String, mode: mode_t) throws {
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            chmod(path, mode)
        }

        private func mode(_ path: String) -> mode_t {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
        }

        @Test func printConfigShowsNoPassphraseStreamIdQueryOrPassword() throws {
            let secrets = ["SID4711", "PASSPHRASE4711", "QUERY4711", "PASSWORD4711", "KEY4711", "KEY4712"]
            let urls = ["srt://127.0.0.1:9000?streamid=SID4711&passphrase=PASSPHRASE4711&latency=120",
                        "rtmp://127.0.0.1/live/KEY4711?auth=QUERY4711", "rtmps://user:PASSWORD4711@127.0.0.1/live/KEY4712"]
            let fromArguments = try ProcessRunner.run(livepush, ["push"] + urls + ["--print-config"])
            #expect(fromArguments.exitCode == 0, "\(fromArguments)")
            let config = temporary("keys") + ".json"
            try write("{\"destinations\": [" + urls.map { "\"\($0)\"" }.joined(separator: ", ") + "]}", to: config, mode: 0o600)
            let fromFile = try ProcessRunner.run(livepush, ["push", "--config", config, "--print-config"])
            #expect(fromFile.exitCode == 0, "\(fromFile)")
            for run in [fromArguments, fromFile] {
                for secret in secrets {
                    #expect(!run.standardOutput.contains(secret) && !run.standardError.contains(secret), "'\(secret)': \(run)")
                }
                let printed = try #require(try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8))
                                               as? [String: Any], "\(run)")
                #expect(printed["destinations"] as? [String] == [
                    "srt://127.0.0.1:9000?streamid=****&passphrase=****&latency=120", "rtmp://127.0.0.1/live/****?auth=****",
                    "rtmps://****@127.0.0.1/live/****",
                ], "\(printed)")
            }
        }

        @Test func theHelperGetsNoKeyInItsEnvironment() throws {
            let dump = temporary("helper-env") + ".txt", wrapper = temporary("helper") + ".sh"
            defer { try? FileManager.default.removeItem(atPath: dump) }
            // A third party's helper: it writes down its environment, then captures as livepush-capture.
            try write("#!/bin/sh\nenv > '\(dump)'\nexec '\(BuiltProducts.path("livepush-capture"))' \"$@\"\n", to: wrapper,
                      mode: 0o755)
            let key = UniqueName.make("envkey")
            let run = try ProcessRunner.run(livepush, [
                "screen", "--helper", wrapper, "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                "--resolution", "320x240", "--no-mic", "--quiet", "--duration", "4",
            ], environment: ["LIVEPUSH_URL": try TestEnvironment.recordURL(key: key)], timeoutSeconds: 60)
            #expect(run.exitCode == 0, "\(run)")
            let environment = try String(contentsOfFile: dump, encoding: .utf8)
            #expect(environment.contains("LIVEPUSH_CAPTURE_GROUP="), "the helper ran: \(environment)")
            #expect(!environment.contains("LIVEPUSH_URL"), "the helper was given LIVEPUSH_URL")
            #expect(!environment.contains(key), "the helper was given the key")
        }

        /// As the pusher's own user, another process cannot read its memory or environment while
        /// it holds a key (PR_SET_DUMPABLE off); with --allow-core-dump it can (the way to get a core).
        @Test(.enabled(if: getuid() == 0 || TestEnvironment.requireAll, "needs root (useradd)"))
        func anotherProcessOfTheUserCannotReadThePusherWhileItHoldsAKey() throws {
            let user = try TemporaryUser.create("keyholder")
            let runtime = "/tmp/lp-keys-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            defer {
                user.remove()
                try? FileManager.default.removeItem(atPath: runtime)
            }
            mkdir(runtime, 0o700)
            chown(runtime, user.uid, getpwuid(user.uid).pointee.pw_gid)
            let urlFile = runtime + "/urls"
            try write(try TestEnvironment.recordURL(key: UniqueName.make("heldkey")) + "\n", to: urlFile, mode: 0o600)
            chown(urlFile, user.uid, getpwuid(user.uid).pointee.pw_gid)
            for allowCore in [false, true] {
                let pusher = try ProcessRunner.start("setpriv", user.arguments(livepush, [
                    "push", "--url-file", urlFile, "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                    "--resolution", "320x240", "--no-mic", "--quiet", "--duration", "20",
                ] + (allowCore ? ["--allow-core-dump"] : []), environment: ["XDG_RUNTIME_DIR": runtime]))
                defer {
                    if pusher.isRunning { pusher.interrupt() }
                    _ = pusher.finish()
                }
                let pid = pusher.processIdentifier
                // Once its control socket is there, the run has read its URLs and started.
                #expect(waitUntil(timeoutSeconds: 30) {
                    ((try? FileManager.default.contentsOfDirectory(atPath: runtime + "/livepush")) ?? [])
                        .contains { $0.hasSuffix(".control") }
                }, "\(pusher.errorSoFar)")
                Thread.sleep(forTimeInterval: 1)
                let read = try ProcessRunner.run("setpriv", user.arguments("cat", ["/proc/\(pid)/environ"]))
                if allowCore {
                    #expect(read.exitCode == 0, "with --allow-core-dump the user's own processes can read it: \(read)")
                } else {
                    #expect(read.exitCode != 0 && read.standardError.contains("Permission denied"),
                            "another process of the user read the pusher's environment while it held a key: \(read)")
                }
            }
        }

        @Test func aConfigFileOrAURLFileHoldingKeysIsRefusedWhenOthersCanReadIt() throws {
            let config = temporary("shared") + ".json"
            try write("{\"destinations\": [\"rtmp://127.0.0.1/live/SHAREDKEY\"]}", to: config, mode: 0o644)
            let refused = try ProcessRunner.run(livepush, ["push", "--config", config, "--print-config"])
            #expect(refused.exitCode == 2, "\(refused)")
            #expect(refused.standardError.contains("the config file '\(config)' holds stream keys (destinations) and is "
                + "readable by group or others (mode 644): make it private with 'chmod 600 \(config)'"), "\(refused)")
            #expect(!refused.standardOutput.contains("SHAREDKEY") && !refused.standardError.contains("SHAREDKEY"))
            // Settings without keys may be shared.
            try write("{\"fps\": 25}", to: config, mode: 0o644)
            let shared = try ProcessRunner.run(livepush, ["push", "rtmp://127.0.0.1/live/k", "--config", config,
                                                          "--print-config"])
            #expect(shared.exitCode == 0, "\(shared)")

            // `ctl add --url-file` is held to --url-file's rule, before anything is sent.
            let urlFile = temporary("shared") + ".url"
            try write("rtmp://127.0.0.1/live/SHAREDKEY\n", to: urlFile, mode: 0o644)
            let ctl = try ProcessRunner.run(livepush, ["ctl", "--socket", "/nonexistent/control", "add", "--url-file", urlFile])
            #expect(ctl.exitCode == 2, "\(ctl)")
            #expect(ctl.standardError.contains("the URL file '\(urlFile)' is readable by group or others (mode 644); it "
                + "holds stream keys: make it private with 'chmod 600 \(urlFile)'"), "\(ctl)")
        }

        @Test func reportsAndSnapshotsAreWrittenOnlyForTheirOwner() throws {
            let report = temporary("private") + ".html", snapshot = temporary("private") + ".png"
            defer {
                try? FileManager.default.removeItem(atPath: report)
                try? FileManager.default.removeItem(atPath: snapshot)
            }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: UniqueName.make("modes")), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic", "--quiet", "--report", report,
            ])
            #expect(try broadcast.waitUntilPublishing())
            #expect(try broadcast.ctl(["snapshot", snapshot]).answer?["ok"] as? Bool == true)
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            #expect(mode(snapshot) == 0o600, "snapshot mode \(String(mode(snapshot), radix: 8))")
            #expect(mode(report) == 0o600, "report mode \(String(mode(report), radix: 8))")
            let saved = temporary("saved") + ".html"
            defer { try? FileManager.default.removeItem(atPath: saved) }
            #expect(try ProcessRunner.run(livepush, ["report", broadcast.eventsPath, saved]).exitCode == 0)
            #expect(mode(saved) == 0o600, "report mode \(String(mode(saved), radix: 8))")
        }
    }
}
