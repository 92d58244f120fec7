import Foundation
import Glibc
import Testing
import TestSupport

extension SharedScreen {
    /// Issue 35 item 6: the events schema is complete (checked against a run that uses every `ctl`
    /// command) and the events agree with the state: `volume` says muted while the mic is, `status`'s
    /// `muted` agrees with `mutedSources`, `recordProgress` comes once a second.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct EveryCommandEventsTests {
        let livepush = BuiltProducts.path("livepush")

        private func validate(_ path: String) throws -> CommandResult {
            try ProcessRunner.run("/usr/bin/python3", [Repository.path("Tests/Fixtures/validate_events.py"),
                                                      Repository.path("docs/events.schema.json"), path])
        }

        /// The verbs `livepush ctl --help` lists: every command there is.
        private func verbs() throws -> [String] {
            let help = try ProcessRunner.run(livepush, ["ctl", "--help"])
            #expect(help.exitCode == 0, "\(help)")
            let lines = help.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let start = try #require(lines.firstIndex(of: "The commands:"), "\(help)")
            return lines[(start + 1)...].prefix { !$0.isEmpty }.map { String($0.prefix { $0 != " " && $0 != ":" }) }
        }

        private func status(_ broadcast: LiveBroadcast) throws -> [String: Any] {
            let answer = try #require(try broadcast.ctl(["status"]).answer)
            return try #require(answer["result"] as? [String: Any], "\(answer)")
        }

        @Test(.timeLimit(.minutes(10)))
        func aRunThatUsesEveryCommandWritesEventsTheSchemaAcceptsAndThatAgreeWithTheState() throws {
            let key = UniqueName.make("everykey"), addedKey = UniqueName.make("everyadd")
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("every")).path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let recording = directory + "/run.mkv"
            let music = try SoundSignals.toneFile(ext: "wav", codec: "pcm_s16le", frequencyHz: 440, amplitude: 0.3, seconds: 3)
            defer { try? FileManager.default.removeItem(atPath: music) }
            let mark = try ReceivedStream.redPicture(width: 64, height: 64, at: directory + "/mark.png")
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "screen", try TestEnvironment.recordURL(key: key), recording, "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(),
                "--replay-buffer", "5", "--replay-dir", directory, "--quiet", "--duration", "90",
            ])
            #expect(try broadcast.waitUntilPublishing())
            let stream = try ProcessRunner.start(livepush, ["ctl", broadcast.name, "events"])
            #expect(waitUntil(timeoutSeconds: 15) { stream.outputSoFar.contains("\"type\":\"statistics\"") })

            // The mic muted: status says so consistently, and the volume events report it muted at 0.
            #expect(try broadcast.ctl(["mute", "mic"]).answer?["ok"] as? Bool == true)
            let mutedSince = broadcast.events.last.flatMap { $0["seq"] as? Int } ?? 0
            let muted = try status(broadcast)
            #expect(muted["mutedSources"] as? [String] == ["mic"], "\(muted)")
            #expect(muted["muted"] as? Bool == true, "a mic-only run with the mic muted is muted: \(muted)")
            #expect(waitUntil(timeoutSeconds: 10, intervalSeconds: 0.2) {
                broadcast.events.filter { $0["type"] as? String == "volume" && ($0["seq"] as? Int ?? 0) > mutedSince }.count >= 3
            })
            #expect(try broadcast.ctl(["unmute", "mic"]).answer?["ok"] as? Bool == true)
            let unmutedSince = broadcast.events.last.flatMap { $0["seq"] as? Int } ?? 0
            let unmuted = try status(broadcast)
            #expect(unmuted["muted"] as? Bool == false && (unmuted["mutedSources"] as? [String])?.isEmpty == true, "\(unmuted)")

            // Every other command, once each.
            let commands: [[String]] = [
                ["pause"], ["resume"], ["mute"], ["unmute"], ["volume", "mic", "80"], ["bitrate", "900"],
                ["min-bitrate", "300"], ["add", "--label", "extra", try TestEnvironment.recordURL(key: addedKey)],
                ["remove", "1"], ["reconnect"], ["bgm", "start", music], ["bgm", "volume", "50"], ["bgm", "stop"],
                ["watermark", "add", mark + "@0.1,0.1,0.2"], ["snapshot", directory + "/shot.png"],
                ["sei", "hello", "--repeat", "2"], ["keyframe"], ["record", "pause"], ["record", "resume"],
                ["record", "split"],
                ["restart"], ["mirror", "push", "on"], ["denoise", "low"], ["agc", "on"], ["voice-activity", "on"],
                ["ear-monitor", "off"], ["preview", "close"], ["log-level", "info"], ["bgm", "loop", "on"],
                ["replay", "save"],
            ]
            var answers: [String: [String: Any]] = [:]
            for words in commands {
                let (result, answer) = try broadcast.ctl(words)
                #expect(answer?["ok"] as? Bool == true, "\(words): \(result)")
                answers[words.joined(separator: " ")] = answer
            }
            let watermark = try #require(answers["watermark add " + mark + "@0.1,0.1,0.2"], "\(answers.keys)")
            let watermarkID = try #require((watermark["result"] as? [String: Any])?["watermarkId"] ?? watermark["watermarkId"], "\(watermark)")
            let removed = try broadcast.ctl(["watermark", "remove", "\(watermarkID)"])
            #expect(removed.answer?["ok"] as? Bool == true, "\(removed.result)")
            // A few seconds of recording for recordProgress's pace, then the end.
            let progressFrom = broadcast.events.filter { $0["type"] as? String == "recordProgress" }.count
            #expect(waitUntil(timeoutSeconds: 10, intervalSeconds: 0.2) {
                broadcast.events.filter { $0["type"] as? String == "recordProgress" }.count >= progressFrom + 5
            })
            let result = broadcast.stop()
            stream.interrupt()
            _ = stream.finish()
            #expect(result.exitCode == 0, "\(result)")

            let validation = try validate(broadcast.eventsPath)
            #expect(validation.exitCode == 0, "\(validation)")
            let events = broadcast.events
            // Every command that changes something has its control event, and the schema names each.
            let controlled = Set(events.filter { $0["type"] as? String == "control" }.compactMap { $0["command"] as? String })
            let changing = Set(try verbs()).subtracting(["status", "events"])
            #expect(changing.isSubset(of: controlled), "no control event for \(changing.subtracting(controlled).sorted())")
            let schema = try #require(try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: Repository.path("docs/events.schema.json")))) as? [String: Any])
            let schemaText = String(decoding: try JSONSerialization.data(withJSONObject: schema), as: UTF8.self)
            for verb in changing { #expect(schemaText.contains("\"\(verb)\""), "the schema names \(verb)") }

            // While muted, every volume event says so and reports 0; afterwards they carry the level again.
            let volumes = events.filter { $0["type"] as? String == "volume" }
            let whileMuted = volumes.filter { ($0["seq"] as? Int ?? 0) > mutedSince && ($0["seq"] as? Int ?? 0) < unmutedSince }
            #expect(whileMuted.count >= 3 && whileMuted.dropFirst().allSatisfy {
                $0["muted"] as? Bool == true && $0["volume"] as? Int == 0
            }, "\(whileMuted)")
            #expect(volumes.filter { ($0["seq"] as? Int ?? 0) > unmutedSince + 2 }.contains {
                $0["muted"] as? Bool == false && ($0["volume"] as? Int ?? 0) > 0
            }, "the tone's level again once unmuted")

            // The replay saved (its replaySaved event is in what the schema accepted above).
            #expect(events.contains { $0["type"] as? String == "replaySaved" && $0["code"] as? Int == 0 }, "no replaySaved")

            // recordProgress once a second: as many as the recording had seconds.
            let progress = events.filter { $0["type"] as? String == "recordProgress" }
            let clock = progress.compactMap { ($0["monotonicNs"] as? NSNumber)?.doubleValue }
            let seconds = ((clock.last ?? 0) - (clock.first ?? 0)) / 1e9
            #expect(progress.count >= 5 && abs(Double(progress.count - 1) - seconds) <= 2,
                    "\(progress.count) recordProgress events in \(seconds) s")

            // The schema takes captureStopped's reason 2 (the display changed).
            let line = directory + "/stopped.jsonl"
            try #"{"type":"captureStopped","reason":2,"seq":1,"monotonicNs":1,"time":"2026-01-01T00:00:00.000Z"}"#
                .write(toFile: line, atomically: true, encoding: .utf8)
            #expect(try validate(line).exitCode == 0)
            let text = try String(contentsOfFile: broadcast.eventsPath, encoding: .utf8)
            #expect(!text.contains(key) && !text.contains(addedKey))
        }

        /// CLOCK_MONOTONIC, ns: the events' `monotonicNs` clock.
        private func monotonicNs() -> UInt64 {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        }

        /// utime + stime of `pid` from /proc/PID/stat, in clock ticks.
        private func cpuTicks(_ pid: Int32) throws -> Int {
            let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            let fields = text[text.index(after: try #require(text.lastIndex(of: ")")))...].split(separator: " ")
            // After the name: state is field 3, utime field 14 and stime field 15 of the whole line.
            return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        }

        /// `appCpu` is on `systemCpu`'s scale, percent of all cores: over the same seconds it matches
        /// the process's CPU time from /proc/PID/stat divided by the cores' time (the old figure, a
        /// share of one core, was the cores' count times larger).
        @Test(.timeLimit(.minutes(10)))
        func appCpuIsAShareOfAllCoresAsSystemCpuIs() throws {
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: UniqueName.make("cpukey")), "--display", try TestEnvironment.display(),
                "--region", "0,0,1280,720", "--resolution", "1280x720", "--no-mic", "--quiet", "--duration", "30",
            ])
            #expect(try broadcast.waitUntilPublishing())
            let pid = broadcast.command.processIdentifier
            let (startNs, startTicks) = (monotonicNs(), try cpuTicks(pid))
            Thread.sleep(forTimeInterval: 6)  // the window measured, not a wait for state
            let (endNs, endTicks) = (monotonicNs(), try cpuTicks(pid))
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            let cores = Double(sysconf(Int32(_SC_NPROCESSORS_ONLN))), ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
            let seconds = Double(endNs - startNs) / 1e9
            let expected = Double(endTicks - startTicks) / ticksPerSecond / seconds / cores * 100
            // The statistics whose second lies inside the window.
            let inside = broadcast.events.filter {
                guard $0["type"] as? String == "statistics", let ns = ($0["monotonicNs"] as? NSNumber)?.uint64Value else { return false }
                return ns > startNs + 1_000_000_000 && ns <= endNs
            }
            let reported = inside.compactMap { $0["appCpu"] as? Int }
            #expect(reported.count >= 4, "\(reported)")
            let mean = Double(reported.reduce(0, +)) / Double(max(1, reported.count))
            #expect(abs(mean - expected) <= max(4, expected * 0.3),
                    "appCpu \(reported) (mean \(mean)) against \(expected) % of \(Int(cores)) cores from /proc")
            #expect(inside.allSatisfy { ($0["appCpu"] as? Int ?? 101) <= 100 && ($0["systemCpu"] as? Int ?? 101) <= 100 })
        }
    }
}
