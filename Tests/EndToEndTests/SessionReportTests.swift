import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `--report FILE.html` and `livepush report EVENTS.jsonl OUT.html` after a real push, opened in
    /// headless Chromium: the charts are drawn, the page loads nothing from outside, and its numbers
    /// are those of the events file (computed here again from the file).
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"), .timeLimit(.minutes(10)))
    struct SessionReportTests {
        let livepush = BuiltProducts.path("livepush")

        private func temporary(_ name: String) -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(name)).path
        }

        @Test(.timeLimit(.minutes(10)))
        func theReportShowsTheChartsAndTheNumbersOfTheEventFile() throws {
            let liveReport = temporary("live") + ".html", savedReport = temporary("saved") + ".html"
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: UniqueName.make("repkey")), "--display",
                try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240",
                "--mic", try TestEnvironment.microphone(), "--retry-count", "1", "--retry-interval", "1000",
                "--quiet", "--duration", "60", "--report", liveReport,
            ])
            #expect(try broadcast.waitUntilPublishing())
            #expect(try broadcast.ctl(["add", "rtmp://127.0.0.1:9/live/\(UniqueName.make("dead"))"]).answer?["ok"] as? Bool == true)
            // Until the unreachable destination has failed and the statistics count more than 100 frames.
            #expect(waitUntil(timeoutSeconds: 60, intervalSeconds: 0.2) {
                let events = broadcast.events
                let frames = events.filter { $0["type"] as? String == "statistics" }
                    .reduce(0) { $0 + (($1["fps"] as? NSNumber)?.intValue ?? 0) }
                return events.contains { $0["type"] as? String == "error" } && frames > 150
            }, "no error event or too few frames: \(broadcast.command.errorSoFar)")
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            #expect(result.standardOutput.contains("Report written to \(liveReport)"), "\(result)")
            let made = try ProcessRunner.run(livepush, ["report", broadcast.eventsPath, savedReport])
            #expect(made.exitCode == 0 && made.standardOutput.hasPrefix("Report of "), "\(made)")

            // The numbers the page must show, from the events file.
            let events = broadcast.events
            let statistics = events.filter { $0["type"] as? String == "statistics" }
            func sum(_ key: String) -> Int { statistics.reduce(0) { $0 + (($1[key] as? NSNumber)?.intValue ?? 0) } }
            let warnings = events.filter { $0["type"] as? String == "warning" }.count
            let errors = events.filter { $0["type"] as? String == "error" }.count
            #expect(warnings >= 1 && errors >= 1, "the unreachable destination warned and failed")
            let encoder = statistics.compactMap { ($0["encoderBitrateKbps"] as? NSNumber)?.intValue }
            let encoderMean = Int((Double(encoder.reduce(0, +)) / Double(max(1, encoder.count))).rounded())

            for page in [liveReport, savedReport] {
                let shot = temporary("report") + ".png"
                let check = try ProcessRunner.run("python3", [Repository.path("Tests/Fixtures/browser_check.py"), "report",
                                                              page, shot], timeoutSeconds: 60)
                #expect(check.exitCode == 0, "\(check)")
                let seen = try #require(try JSONSerialization.jsonObject(with: Data(check.standardOutput.utf8))
                                            as? [String: Any], "\(check)")
                #expect(seen["ready"] as? Bool == true, "\(seen)")
                #expect(seen["scripts"] as? Int == 0, "everything is inlined: \(seen)")
                let canvases = seen["canvases"] as? [[String: Any]] ?? []
                #expect(canvases.count == 6 && canvases.allSatisfy { $0["drawn"] as? Int ?? 0 > 2000 }, "\(canvases)")
                let numbers = seen["numbers"] as? [String: String] ?? [:]
                #expect(numbers["framesSent"] == String(sum("fps")), "\(numbers)")
                #expect(numbers["framesDropped"] == String(sum("framesDropped")), "\(numbers)")
                #expect(numbers["bytesSent"] == String(sum("bytesSent")), "\(numbers)")
                #expect(numbers["statistics"] == String(statistics.count), "\(numbers)")
                #expect(numbers["warnings"] == String(warnings) && numbers["errors"] == String(errors), "\(numbers)")
                #expect(numbers["encoderKbps"] == "\(encoder.min() ?? 0) / \(encoderMean) / \(encoder.max() ?? 0)",
                        "\(numbers)")
                #expect(seen["timelineWarnings"] as? Int == warnings && seen["timelineErrors"] as? Int == errors,
                        "every warning and error is on the timeline: \(seen)")
                #expect(Int(sum("fps")) > 100, "a real run: \(sum("fps")) frames")
            }
        }

        /// Issue 30, attack 5: events whose texts are HTML, script, template placeholders and
        /// attribute breakouts. Each payload sets window.lpPwned if it ever runs; every text must
        /// show as itself, and every chart must still draw.
        @Test(.timeLimit(.minutes(10)))
        func aReportOfHostileEventsRunsNoScriptShowsEveryTextAsItIsAndDrawsEveryChart() throws {
            let url = "rtmp://h/</scr{{SUBTITLE}}><img src=x onerror=window.lpPwned='subtitle'>"
            let texts = [
                "warning": "{{TIMELINE}} {{DATA}} {{CHARTJS}} </script><script>window.lpPwned='warning'</script>",
                "error": "<!--<script> </ScRiPt ><img src=x onerror=window.lpPwned='error'>",
                "status": "<img src=x onerror=window.lpPwned='status'> & {{TITLE}}",
                "control": "\"><svg onload=\"window.lpPwned='control'\">",
                "path": "/tmp/a'\"><script>window.lpPwned='path'</script>.mp4",
            ]
            let title = "</title><script>window.lpPwned='title'</script>{{SUMMARY}}"
            var lines: [String] = []
            var seq = 0
            func add(_ fields: [String: Any], second: Int) throws {
                seq += 1
                var event = fields
                event["seq"] = seq
                event["monotonicNs"] = 5_000_000_000 + second * 1_000_000_000
                event["time"] = String(format: "2025-01-01T10:00:%02d.000Z", second)
                let data = try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys])
                lines.append(String(decoding: data, as: UTF8.self))
            }
            try add(["type": "session", "event": "start", "name": "ipt", "version": "{{SUMMARY}}", "width": 320,
                     "height": 240, "fps": 30], second: 0)
            for second in 1...20 {
                try add(["type": "statistics", "fps": 30, "encoderBitrateKbps": 1000 + second * 10, "videoBitrateKbps": 900,
                         "sendBitrateKbps": 950, "queueMs": second, "framesDropped": 0, "appCpu": 20, "systemCpu": 30,
                         "micLevel": 40, "desktopLevel": 10, "bytesSent": 120_000, "framesRepeated": 0, "framesSkipped": 0,
                         "destinations": [["index": 0, "url": url, "status": "connectSuccess", "sendBitrateKbps": 950,
                                           "queueMs": second, "bytesSent": 120_000, "framesDropped": 0]]], second: second)
                if second == 5 { try add(["type": "warning", "code": 1101, "message": texts["warning"]!], second: second) }
                if second == 6 { try add(["type": "error", "code": -1307, "message": texts["error"]!], second: second) }
                if second == 7 {
                    try add(["type": "pushStatus", "status": "reconnecting", "message": texts["status"]!], second: second)
                }
                if second == 8 { try add(["type": "control", "command": "add", "args": [texts["control"]!]], second: second) }
                if second == 9 { try add(["type": "recordBegin", "code": 0, "path": texts["path"]!], second: second) }
            }
            try add(["type": "session", "event": "end"], second: 21)
            let input = temporary("hostile") + ".jsonl", page = temporary("hostile") + ".html"
            try (lines.joined(separator: "\n") + "\n").write(toFile: input, atomically: true, encoding: .utf8)
            let made = try ProcessRunner.run(livepush, ["report", input, page, "--title", title])
            #expect(made.exitCode == 0, "\(made)")

            let shot = temporary("hostile") + ".png"
            let check = try ProcessRunner.run("python3", [Repository.path("Tests/Fixtures/browser_check.py"), "report",
                                                          page, shot], timeoutSeconds: 60)
            #expect(check.exitCode == 0, "\(check)")
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(check.standardOutput.utf8))
                                        as? [String: Any], "\(check)")
            #expect(seen["pwned"] is NSNull, "a hostile event's script ran: \(seen["pwned"] ?? "?")")
            #expect(seen["elements"] as? Int == 0, "a hostile event made an element: \(seen)")
            #expect(seen["ready"] as? Bool == true, "\(seen)")
            let canvases = seen["canvases"] as? [[String: Any]] ?? []
            #expect(canvases.count == 6 && canvases.allSatisfy { $0["drawn"] as? Int ?? 0 > 2000 }, "\(canvases)")
            #expect(seen["title"] as? String == "LivePush session report: " + title, "\(seen)")
            #expect((seen["subtitle"] as? String)?.hasPrefix("ipt · LivePush {{SUMMARY}} · 320x240 at 30 fps") == true,
                    "\(seen)")
            #expect(seen["destinationTexts"] as? [String] == ["#0 " + url], "\(seen)")
            let timeline = (seen["timelineTexts"] as? [String] ?? []).joined(separator: "\n")
            for (kind, text) in texts {
                #expect(timeline.contains(text), "the \(kind) text is not shown as it is: \(timeline)")
            }
            #expect(seen["numbers"].flatMap { ($0 as? [String: String])?["framesSent"] } == "600", "\(seen)")
        }

        @Test func aFileWithoutEventsIsRefusedSayingHowToMakeOne() throws {
            let input = temporary("notevents") + ".jsonl"
            try "hello\nworld\n".write(toFile: input, atomically: true, encoding: .utf8)
            let result = try ProcessRunner.run(livepush, ["report", input, temporary("out") + ".html"])
            #expect(result.exitCode == 1)
            #expect(result.standardError.contains("no LivePush events in the input (2 lines were not events); "
                + "write them with --events FILE"), "\(result)")
        }
    }
}
