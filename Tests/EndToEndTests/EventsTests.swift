import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `--events FILE` and `livepush ctl NAME events` during a real run (screen, recording, push,
    /// microphone), each line checked against docs/events.schema.json with python3-jsonschema.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"), .timeLimit(.minutes(10)))
    struct EventsTests {
        let livepush = BuiltProducts.path("livepush")

        /// Debian's interpreter, which has Debian's python3-jsonschema (tools/bootstrap), whatever else is on PATH.
        private func validate(_ path: String) throws -> CommandResult {
            try ProcessRunner.run("/usr/bin/python3", [Repository.path("Tests/Fixtures/validate_events.py"),
                                              Repository.path("docs/events.schema.json"), path])
        }

        @Test(.timeLimit(.minutes(10)))
        func aRealRunWritesEveryKindOfEventValidAgainstTheSchemaAndCtlEventsStreamsTheSameLines() throws {
            let key = UniqueName.make("evkey"), deadKey = UniqueName.make("deadkey")
            let recording = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("ev") + ".mkv").path
            defer { try? FileManager.default.removeItem(atPath: recording) }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "screen", try TestEnvironment.recordURL(key: key), recording, "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(),
                "--retry-count", "1", "--retry-interval", "1000", "--quiet", "--duration", "60",
            ])
            #expect(try broadcast.waitUntilPublishing())
            let stream = try ProcessRunner.start(livepush, ["ctl", broadcast.name, "events"])
            // Subscribed once an event came through it (statistics come once a second); the answer line
            // alone is written before the subscription is made.
            #expect(waitUntil(timeoutSeconds: 15) { stream.outputSoFar.contains("\"type\":\"statistics\"") },
                    "ctl events streamed no event: \(stream.outputSoFar) \(stream.errorSoFar)")
            // A destination that cannot be reached: a warning (reconnecting), then an error, keys redacted.
            let added = try broadcast.ctl(["add", "rtmp://127.0.0.1:9/live/\(deadKey)"])
            #expect(added.answer?["ok"] as? Bool == true, "\(added.result)")
            #expect(try broadcast.ctl(["pause"]).answer?["ok"] as? Bool == true)
            // Until the unreachable destination has warned and failed, and the running kinds came.
            let running: Set = ["warning", "error", "recordProgress", "volume", "control", "statistics"]
            #expect(waitUntil(timeoutSeconds: 30, intervalSeconds: 0.2) {
                running.isSubset(of: Set(broadcast.events.compactMap { $0["type"] as? String }))
            }, "\(Set(broadcast.events.compactMap { $0["type"] as? String }).sorted())")
            let result = broadcast.stop()
            stream.interrupt()
            let streamed = stream.finish()
            #expect(result.exitCode == 0, "\(result)")

            let validation = try validate(broadcast.eventsPath)
            #expect(validation.exitCode == 0, "\(validation)")
            let events = broadcast.events
            let types = Set(events.compactMap { $0["type"] as? String })
            for type in ["session", "pushStatus", "captureStarted", "firstVideoFrame", "firstAudioFrame", "recordBegin",
                         "recordProgress", "recordComplete", "statistics", "volume", "control", "warning", "error",
                         "state", "pushPaused"] {
                #expect(types.contains(type), "no \(type) event in \(types.sorted())")
            }
            let sequence = events.compactMap { $0["seq"] as? Int }
            #expect(sequence == Array(1...events.count), "seq counts every line once, in order")
            let clock = events.compactMap { ($0["monotonicNs"] as? NSNumber)?.uint64Value }
            #expect(clock.count == events.count && zip(clock, clock.dropFirst()).allSatisfy { $0 <= $1 })
            // Statistics once a second: as many as the run had seconds.
            let statistics = events.filter { $0["type"] as? String == "statistics" }
            let seconds = Double((clock.last ?? 0) - (clock.first ?? 0)) / 1e9
            #expect(abs(Double(statistics.count) - seconds) <= 2, "\(statistics.count) statistics in \(seconds) s")
            #expect(statistics.contains { ($0["destinations"] as? [Any])?.count == 2 })
            #expect(statistics.last?["paused"] as? Bool == true)
            let text = try String(contentsOfFile: broadcast.eventsPath, encoding: .utf8)
            #expect(!text.contains(key) && !text.contains(deadKey), "no stream key in the events")
            #expect(text.contains("rtmp://127.0.0.1:9/live/****"))

            // `ctl events`: its first line is the answer, then the very lines of the file.
            let lines = streamed.standardOutput.split(separator: "\n").map(String.init)
            #expect(lines.first == #"{"command":"events","ok":true}"#, "\(streamed)")
            let fileLines = Set(text.split(separator: "\n").map(String.init))
            #expect(lines.count > 5 && lines.dropFirst().allSatisfy(fileLines.contains), "\(streamed)")
            #expect(lines.contains { $0.contains(#""type":"control""#) && $0.contains(#""command":"pause""#) })
        }

        @Test(.timeLimit(.minutes(10)))
        func logLevelErrorHidesTheNotesAndDebugLetsFFmpegsOwnLogThrough() throws {
            func run(_ level: String) throws -> CommandResult {
                try ProcessRunner.run(livepush, [
                    "push", try TestEnvironment.liveURL(key: UniqueName.make("loglevel")), "--display",
                    try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic",
                    "--quiet", "--duration", "2", "--log-level", level,
                ], timeoutSeconds: 30)
            }
            let quiet = try run("error"), chatty = try run("debug")
            #expect(quiet.exitCode == 0 && chatty.exitCode == 0, "\(quiet)\n\(chatty)")
            #expect(!quiet.standardError.contains("livepush: "), "no notes at error level: \(quiet.standardError)")
            #expect(chatty.standardError.contains("livepush: screen capture started"), "\(chatty.standardError)")
            #expect(chatty.standardError.contains("[libx264 @"), "FFmpeg logs at debug: \(chatty.standardError.prefix(2000))")
            #expect(!quiet.standardError.contains("[libx264 @"))
        }

        @Test func aFileThatCannotBeWrittenIsRefusedBeforeAnythingStarts() throws {
            let result = try ProcessRunner.run(livepush, ["push", "rtmp://127.0.0.1:9/live/k", "--display",
                                                          try TestEnvironment.display(), "--events", "/nonexistent/ev.jsonl"])
            #expect(result.exitCode == 1)
            #expect(result.standardError.contains("--events"), "\(result)")
            #expect(result.standardError.contains("/nonexistent/ev.jsonl"), "\(result)")
        }
    }
}
