import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// Issue 35 items 5 and 6 at a real nginx: two destinations on one server with different keys are
    /// told apart (a label, or the key's fingerprint) in `ctl status`, the events and the report, and
    /// the keys never show; `delayMs` is the connection's round trip as the kernel measures it
    /// (TCP_INFO, what `ss -ti` prints), the send queue's wait a figure of its own.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct DestinationIdentityTests {
        let livepush = BuiltProducts.path("livepush")

        /// The first 6 hex digits of SHA-256 of `key`, computed by Python's hashlib (not our code).
        private func fingerprint(_ key: String) throws -> String {
            let result = try ProcessRunner.run("/usr/bin/python3", [
                "-c", "import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest()[:6])", key,
            ])
            #expect(result.exitCode == 0, "\(result)")
            return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        private func destinations(_ broadcast: LiveBroadcast) throws -> [[String: Any]] {
            let answer = try #require(try broadcast.ctl(["status"]).answer)
            let result = try #require(answer["result"] as? [String: Any], "\(answer)")
            return try #require(result["destinations"] as? [[String: Any]], "\(result)")
        }

        /// Every established connection to `port` as `ss -tin` shows it: its round-trip time, ms.
        private func kernelRoundTripsMs(port: String) throws -> [Double] {
            let result = try ProcessRunner.run("/usr/bin/ss", ["-tin", "state", "established", "dst", "127.0.0.1:\(port)"])
            #expect(result.exitCode == 0, "\(result)")
            return result.standardOutput.split(whereSeparator: \.isWhitespace).compactMap { word -> Double? in
                guard word.hasPrefix("rtt:") else { return nil }
                return Double(word.dropFirst(4).split(separator: "/").first ?? "")
            }
        }

        @Test(.timeLimit(.minutes(10)))
        func twoKeysOnOneServerAreToldApartByLabelAndFingerprintAndDelayIsTheKernelsRoundTrip() throws {
            let studioKey = UniqueName.make("idstudio"), plainKey = UniqueName.make("idplain")
            let backupKey = UniqueName.make("idbackup")
            let studioURL = try TestEnvironment.recordURL(key: studioKey), plainURL = try TestEnvironment.recordURL(key: plainKey)
            let port = try #require(TestEnvironment.variable("LIVEPUSH_TEST_RTMP_PORT"))
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", "studio=" + studioURL, plainURL, "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic", "--quiet", "--duration", "60",
            ])
            #expect(try broadcast.waitUntilPublishing(destinations: 2))
            let (studioPrint, plainPrint) = (try fingerprint(studioKey), try fingerprint(plainKey))
            #expect(studioPrint != plainPrint)

            // Status: the same redacted URL twice, told apart by the label and by the key's fingerprint.
            var rows: [[String: Any]] = []
            #expect(waitUntil(timeoutSeconds: 10, intervalSeconds: 0.3) {
                rows = (try? destinations(broadcast)) ?? []
                return rows.count == 2 && rows.allSatisfy { ($0["delayMs"] as? Int ?? 0) > 0 }
            }, "\(rows)")
            #expect(Set(rows.compactMap { $0["url"] as? String }).count == 1, "one redacted URL for both: \(rows)")
            let studio = try #require(rows.first { $0["label"] as? String == "studio" }, "\(rows)")
            let plain = try #require(rows.first { $0["label"] == nil }, "\(rows)")
            #expect(studio["keyFingerprint"] as? String == studioPrint)
            #expect(plain["keyFingerprint"] as? String == plainPrint)

            // delayMs is TCP_INFO's round trip, as `ss -ti` reads the same sockets: on a busy loopback it
            // moves between tens of µs and tens of ms (delayed acknowledgements), so each second's figure
            // is checked against what `ss` saw over those seconds, sampled ten times a second.
            let before = broadcast.events.count
            var kernel: [Double] = []
            for _ in 0..<40 {
                kernel += try kernelRoundTripsMs(port: port)
                Thread.sleep(forTimeInterval: 0.1)
            }
            let seconds = broadcast.events.dropFirst(before).filter { $0["type"] as? String == "statistics" }
            let reported = seconds.flatMap { ($0["destinations"] as? [[String: Any]] ?? []).compactMap { $0["delayMs"] as? Int } }
            #expect(kernel.count >= 40 && reported.count >= 4, "ss: \(kernel.count) samples, ours: \(reported)")
            let kernelMaxMs = Int((kernel.max() ?? 0).rounded(.up))
            #expect(reported.allSatisfy { $0 >= 1 && $0 <= kernelMaxMs + 10 }, "ours \(reported) ms, the kernel's up to \(kernelMaxMs) ms")
            #expect(seconds.allSatisfy { $0["queueDelayMs"] is Int && $0["queueJitterMs"] is Int && $0["jitterMs"] is Int })
            for row in try destinations(broadcast) { #expect(row["queueDelayMs"] is Int && row["jitterMs"] is Int, "\(row)") }

            // ctl add --label, a label already in use refused, and `remove` of the labelled one by its row.
            let added = try broadcast.ctl(["add", "--label", "backup", try TestEnvironment.recordURL(key: backupKey)])
            #expect(added.answer?["ok"] as? Bool == true, "\(added.result)")
            let clash = try broadcast.ctl(["add", "--label", "studio", try TestEnvironment.recordURL(key: UniqueName.make("idclash"))])
            #expect(clash.answer?["ok"] as? Bool == false, "\(clash.result)")
            #expect(clash.result.standardOutput.contains("already names destination"), "\(clash.result)")
            #expect(try broadcast.waitUntilPublishing(destinations: 3))
            let studioIndex = try #require(try destinations(broadcast).first { $0["label"] as? String == "studio" }?["index"] as? Int)
            #expect(try broadcast.ctl(["remove", String(studioIndex)]).answer?["ok"] as? Bool == true)
            let left = try destinations(broadcast)
            #expect(Set(left.compactMap { $0["keyFingerprint"] as? String }) == [plainPrint, try fingerprint(backupKey)], "\(left)")
            // A few statistics with the three of them, then the end.
            #expect(waitUntil(timeoutSeconds: 10, intervalSeconds: 0.3) {
                broadcast.events.contains { ($0["destinations"] as? [[String: Any]])?.contains { $0["label"] as? String == "backup" } == true }
            })
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")

            // The events: each destination's fingerprint in its pushStatus, the statistics' rows named,
            // every line valid against the schema, no key anywhere.
            let text = try String(contentsOfFile: broadcast.eventsPath, encoding: .utf8)
            for key in [studioKey, plainKey, backupKey] {
                #expect(!text.contains(key), "no stream key in the events")
                #expect(!result.standardOutput.contains(key) && !result.standardError.contains(key), "no key in the output")
            }
            let statuses = broadcast.events.filter { $0["type"] as? String == "pushStatus" }
            let printed = Set(statuses.compactMap { ($0["extraInfo"] as? [String: String])?["keyFingerprint"] })
            #expect(printed.isSuperset(of: [studioPrint, plainPrint]), "\(printed)")
            #expect(statuses.contains { ($0["extraInfo"] as? [String: String])?["label"] == "studio" })
            let rowsSeen = broadcast.events.flatMap { $0["destinations"] as? [[String: Any]] ?? [] }
            #expect(rowsSeen.contains { $0["label"] as? String == "studio" && $0["keyFingerprint"] as? String == studioPrint })
            #expect(rowsSeen.contains { $0["label"] == nil && $0["keyFingerprint"] as? String == plainPrint })
            let statistics = broadcast.events.filter { $0["type"] as? String == "statistics" }
            #expect(statistics.contains { ($0["delayMs"] as? Int ?? 0) >= 1 }, "a round trip while publishing")
            #expect(statistics.allSatisfy { $0["queueDelayMs"] is Int && $0["queueJitterMs"] is Int })
            let validation = try ProcessRunner.run("/usr/bin/python3", [Repository.path("Tests/Fixtures/validate_events.py"),
                                                                     Repository.path("docs/events.schema.json"), broadcast.eventsPath])
            #expect(validation.exitCode == 0, "\(validation)")

            // The report names each row by its label or fingerprint.
            let report = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("idreport") + ".html").path
            defer { try? FileManager.default.removeItem(atPath: report) }
            let written = try ProcessRunner.run(livepush, ["report", broadcast.eventsPath, report])
            #expect(written.exitCode == 0, "\(written)")
            let html = try String(contentsOfFile: report, encoding: .utf8)
            #expect(html.contains("(studio)") && html.contains("(key \(plainPrint))") && html.contains("(backup)"))
            for key in [studioKey, plainKey, backupKey] { #expect(!html.contains(key)) }
        }

        @Test(.timeLimit(.minutes(10)))
        func theLabelFormIsTheSameInAURLFileTheEnvironmentAndAConfigFile() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("labels")).path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let (fileKey, envKey, configKey) = (UniqueName.make("lfile"), UniqueName.make("lenv"), UniqueName.make("lconf"))
            let urlFile = directory + "/urls"
            try "# a comment\nfiled=\(try TestEnvironment.recordURL(key: fileKey))\n".write(toFile: urlFile, atomically: true, encoding: .utf8)
            chmod(urlFile, 0o600)
            let pushed = try LiveBroadcast(livepush: livepush, [
                "push", "--url-file", urlFile, "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                "--resolution", "320x240", "--no-mic", "--quiet", "--duration", "30",
            ], environment: ["LIVEPUSH_URL": "from-env=" + (try TestEnvironment.recordURL(key: envKey))])
            #expect(try pushed.waitUntilPublishing(destinations: 2))
            let rows = try destinations(pushed)
            #expect(Set(rows.compactMap { $0["label"] as? String }) == ["filed", "from-env"], "\(rows)")
            #expect(pushed.stop().exitCode == 0)

            let config = directory + "/broadcast.json"
            try #"{"destinations": ["configured=\#(try TestEnvironment.recordURL(key: configKey))"]}"#
                .write(toFile: config, atomically: true, encoding: .utf8)
            chmod(config, 0o600)
            let configured = try LiveBroadcast(livepush: livepush, [
                "push", "--config", config, "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                "--resolution", "320x240", "--no-mic", "--quiet", "--duration", "30",
            ])
            #expect(try configured.waitUntilPublishing())
            #expect(try destinations(configured).first?["label"] as? String == "configured")
            #expect(configured.stop().exitCode == 0)
            let text = try String(contentsOfFile: configured.eventsPath, encoding: .utf8)
            #expect(text.contains(#""label":"configured""#) && !text.contains(configKey))
        }

        @Test func aLabelUsedTwiceOrMalformedIsRefusedBeforeTheStart() throws {
            let one = try TestEnvironment.recordURL(key: UniqueName.make("twice1"))
            let two = try TestEnvironment.recordURL(key: UniqueName.make("twice2"))
            let twice = try ProcessRunner.run(livepush, ["push", "cam=" + one, "cam=" + two, "--display",
                                                         try TestEnvironment.display(), "--no-mic", "--duration", "1"])
            #expect(twice.exitCode == 2, "\(twice)")
            #expect(twice.standardError.contains("two destinations are labelled 'cam'"), "\(twice)")
            let bad = try ProcessRunner.run(livepush, ["push", "my cam=" + one, "--display", try TestEnvironment.display(),
                                                       "--no-mic", "--duration", "1"])
            #expect(bad.exitCode == 2, "\(bad)")
            #expect(bad.standardError.contains("cannot label a destination"), "\(bad)")
        }
    }
}
