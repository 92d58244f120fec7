import Foundation
import Glibc
import Testing
import TestSupport

extension SharedScreen {
    /// No stream key, password or passphrase in anything `livepush push` says, on any path: every
    /// printed line (stdout, stderr, debug log level), every event of the events file (each
    /// observer callback's message and every `extraInfo` value, the statistics, the push states),
    /// for RTMP, RTMPS and SRT, through connect, reconnect, reject, parse-error and give-up, with
    /// the URLs on the command line, in `--url-file` and in `LIVEPUSH_URL`.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmps),
                    "needs the test Xvfb and the TLS front (make test)"), .timeLimit(.minutes(10)))
    struct SecretsEverywhereTests {
        let livepush = BuiltProducts.path("livepush")

        /// A secret no other text holds by chance.
        private static func secret(_ label: String) -> String {
            label + String((0..<14).map { _ in "abcdefghjkmnpqrstuvwxyz23456789".randomElement()! })
        }

        /// One `livepush push` run: what it printed and what its events file holds.
        private final class Run {
            let name: String
            let command: RunningCommand
            let eventsPath: String
            init(name: String, command: RunningCommand, eventsPath: String) {
                self.name = name
                self.command = command
                self.eventsPath = eventsPath
            }
        }

        private func start(_ name: String, _ arguments: [String], environment: [String: String] = [:],
                           retries: Int = 1) throws -> Run {
            let eventsPath = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("secrets")).path
                + ".jsonl"
            let command = try ProcessRunner.start(livepush, ["push"] + arguments + [
                "--display", try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240",
                "--no-mic", "--quiet", "--log-level", "debug", "--events", eventsPath, "--retry-interval", "1000",
                "--retry-count", String(retries), "--duration", "16",
            ], environment: environment)
            return Run(name: name, command: command, eventsPath: eventsPath)
        }

        /// A file only its owner can read, holding `urls`.
        private func urlFile(_ urls: [String]) throws -> String {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("urls")).path
            try Data((urls.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            return path
        }

        @Test func noKeyPasswordOrPassphraseInAnyLineEventOrExtraInfoOnAnyPath() throws {
            var secrets: [String] = []
            func make(_ label: String) -> String {
                let value = Self.secret(label)
                secrets.append(value)
                return value
            }
            // Connect and reconnect, one server of each scheme restarted mid-run.
            let nginx = try PrivateNginx()
            let tls = try PrivateTLSFront()
            let srtPassphrase = make("srtpass"), srtKey = make("srtid")
            var srt = try SRTListener(passphrase: srtPassphrase)
            let rtmpKey = make("rtmpkey"), rtmpsKey = make("rtmpskey")
            var runs = [
                try start("rtmp reconnect (--url-file)", ["--url-file", try urlFile([nginx.rtmpURL + "/record/\(rtmpKey)"])],
                          retries: 10),
                try start("rtmps reconnect (LIVEPUSH_URL)", ["--ca-file", try TestEnvironment.testCAFile()], environment: ["LIVEPUSH_URL": tls.url(key: rtmpsKey)], retries: 10),
                try start("srt reconnect (--url-file)", [
                    "--url-file", try urlFile([srt.callerURL("streamid=\(srtKey)&passphrase=\(srtPassphrase)")]),
                ], retries: 10),
            ]
            let reconnecting = Array(runs)
            // Rejected by the server.
            let wrongPassphraseListener = try SRTListener(passphrase: Self.secret("listenerpass"))
            let rtmpPort = try TestEnvironment.value("LIVEPUSH_TEST_RTMP_URL", of: .rtmp).split(separator: ":").last ?? ""
            runs += [
                try start("rtmp rejected (no such application)", ["rtmp://127.0.0.1:\(rtmpPort)/nosuchapp/\(make("rejkey"))"]),
                try start("rtmps rejected (untrusted certificate)",
                          [try TestEnvironment.rtmpsURL(.untrusted, key: make("untrustedkey")), "--ca-file",
                           try TestEnvironment.testCAFile()]),
                try start("srt rejected (wrong passphrase)", [
                    wrongPassphraseListener.callerURL("streamid=\(make("wrongid"))&passphrase=\(make("wrongpass"))"),
                ]),
            ]
            // Nobody listening: reconnection attempts, then giving up.
            runs += [
                try start("rtmp give-up", ["rtmp://127.0.0.1:9/live/\(make("gonekey"))"]),
                try start("rtmps give-up (LIVEPUSH_URL)", [],
                          environment: ["LIVEPUSH_URL": "rtmps://127.0.0.1:9/live/\(make("gonetlskey"))"]),
                try start("srt give-up", ["srt://127.0.0.1:9?streamid=\(make("goneid"))&passphrase=\(make("gonepass"))"]),
            ]
            // URLs that do not parse, the secret somewhere in them.
            runs += [
                try start("user info", ["rtmp://user:\(make("password"))@127.0.0.1/live/\(make("uikey"))"]),
                try start("bad port", ["rtmp://127.0.0.1:x\(make("portpass"))/live/\(make("portkey"))"]),
                try start("rtmps bad port", ["rtmps://127.0.0.1:99999/live/\(make("tlsportkey"))"]),
                try start("srt short passphrase", ["srt://127.0.0.1:9000?streamid=\(make("shortid"))&passphrase=ab"]),
                try start("srt misspelt option", ["srt://127.0.0.1:9000?streamid=\(make("optid"))&pasphrase=\(make("typo"))"]),
                try start("no scheme", ["rtmp:/127.0.0.1/live/\(make("noschemekey"))"]),
                try start("a bare key", [make("k")]),
                try start("bad url file line", ["--url-file", try urlFile(["rtmp//127.0.0.1/live/\(make("filekey"))"])]),
                try start("bad LIVEPUSH_URL", [], environment: ["LIVEPUSH_URL": "rtmpx://127.0.0.1/live/\(make("envkey"))"]),
            ]

            /// How many times the run's events file says a push connected.
            func connected(_ run: Run) -> Int {
                ((try? String(contentsOfFile: run.eventsPath, encoding: .utf8)) ?? "")
                    .components(separatedBy: "\"status\":\"connectSuccess\"").count - 1
            }
            // The restarts, once each reconnecting run has published.
            for run in reconnecting {
                #expect(waitUntil(timeoutSeconds: 30) { connected(run) >= 1 }, "\(run.name): \(run.command.errorSoFar)")
            }
            nginx.stop()
            tls.stop()
            srt.kill()
            for run in reconnecting {
                #expect(run.command.waitForError("reconnect", timeoutSeconds: 15), "\(run.name): \(run.command.errorSoFar)")
            }
            try nginx.start()
            try tls.start()
            srt = try SRTListener(passphrase: srtPassphrase, port: srt.port)
            for run in reconnecting {
                #expect(waitUntil(timeoutSeconds: 30) { connected(run) >= 2 },
                        "\(run.name) did not publish again: \(run.command.errorSoFar)")
            }

            // Everything said, run by run.
            var corpus: [(name: String, text: String)] = []
            for run in runs {
                let result = run.command.finish()
                let events = (try? String(contentsOfFile: run.eventsPath, encoding: .utf8)) ?? ""
                try? FileManager.default.removeItem(atPath: run.eventsPath)
                let parseError = runs.suffix(9).contains { $0 === run }
                let expected = reconnecting.contains { $0 === run } ? result.exitCode == 0
                    : parseError ? result.exitCode != 0 : true
                let said = result.standardError.split(separator: "\n").filter { $0.hasPrefix("livepush") }.suffix(8)
                #expect(expected, "\(run.name): exit status \(result.exitCode): \(said)")
                #expect(!result.standardError.isEmpty, "\(run.name) printed nothing")
                corpus.append((run.name, result.standardOutput + "\n" + result.standardError + "\n" + events))
            }
            _ = srt.finish(timeoutSeconds: 5)
            _ = wrongPassphraseListener.finish(timeoutSeconds: 1)
            // Each path said what happened (so the search covered it), and its events file was written.
            for (name, text) in corpus.prefix(corpus.count - 9) {
                #expect(text.contains("\"type\":\"session\""), "\(name): no events written")
                #expect(text.contains("\"type\":\"pushStatus\""), "\(name): no push status event")
            }
            for (name, text) in corpus where name.contains("give-up") || name.contains("rejected") {
                #expect(text.contains("\"type\":\"error\""), "\(name): no error event: \(text.suffix(800))")
            }
            for (name, text) in corpus {
                for secret in secrets {
                    let lines = text.split(separator: "\n").filter { $0.contains(secret) }
                    #expect(lines.isEmpty, "\(name): '\(secret)' in \(lines.prefix(3))")
                }
            }
            #expect(corpus.count == 18 && secrets.count == 24)
        }
    }
}
