import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// Issue 35, item 4: a push outlasts a real outage of its server. A private nginx-rtmp is stopped
    /// for 60 s while `livepush push --record` runs with the default reconnection (growing waits for
    /// 5 minutes), under a CPU hog; the push resumes at nginx afterwards (what arrived after the
    /// outage is decoded), the local recording has no gap across it, and the events and `ctl status`
    /// say reconnecting with the attempt and the wait before the next one.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct ReconnectionOutageTests {
        let livepush = BuiltProducts.path("livepush")

        /// The reconnecting pushStatus events so far: (attempt, nextRetryMs).
        private func reconnections(_ events: [[String: Any]]) -> [(attempt: Int, nextRetryMs: Int)] {
            events.filter { $0["type"] as? String == "pushStatus" && $0["status"] as? String == "reconnecting" }.map {
                let info = $0["extraInfo"] as? [String: String] ?? [:]
                return (Int(info["attempt"] ?? "") ?? -1, Int(info["nextRetryMs"] ?? "") ?? -1)
            }
        }

        private func states(_ events: [[String: Any]]) -> [String] {
            events.filter { $0["type"] as? String == "state" }.compactMap { $0["state"] as? String }
        }

        @Test(.timeLimit(.minutes(10)))
        func aSixtySecondOutageOfTheServerIsOutlastedAndTheRecordingHasNoGap() throws {
            let nginx = try PrivateNginx()
            defer { nginx.stop() }
            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            let key = UniqueName.make("outage")
            let recording = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("outage") + ".mkv").path
            defer { try? FileManager.default.removeItem(atPath: recording) }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", nginx.rtmpURL + "/record/\(key)", "--record", recording, "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(), "--quiet",
            ])
            #expect(try broadcast.waitUntilPublishing(timeoutSeconds: 20), "\(broadcast.command.errorSoFar)")
            Thread.sleep(forTimeInterval: 3)  // 3 s of stream before the outage: part of the stimulus

            // The outage: nginx down for 60 s. What it recorded before is moved away, so that the file
            // at the end holds only what arrived after the outage (nginx opens KEY.flv anew on publish).
            let receivedPath = nginx.recordDirectory + "/\(key).flv"
            nginx.stop()
            let outageStart = Date()
            try FileManager.default.moveItem(atPath: receivedPath, toPath: receivedPath + ".before")
            let reconnecting = waitUntil(timeoutSeconds: 10) { reconnections(broadcast.events).count >= 1 }
            #expect(reconnecting, "no reconnecting event: \(broadcast.events.suffix(5))")
            let status = try broadcast.ctl(["status"]).answer?["result"] as? [String: Any]
            #expect(status?["state"] as? String == "reconnecting", "ctl status during the outage: \(String(describing: status))")
            let destination = (status?["destinations"] as? [[String: Any]])?.first
            #expect(destination?["status"] as? String == "reconnecting", "\(String(describing: destination))")
            while Date().timeIntervalSince(outageStart) < 60 { Thread.sleep(forTimeInterval: 0.5) }  // the outage itself
            #expect(broadcast.command.isRunning, "the push ended during the outage: \(broadcast.command.errorSoFar)")
            try nginx.start()
            let restartedAt = Date()

            // Back: the next attempt (at most 30 s and its jitter later) publishes again.
            let resumed = waitUntil(timeoutSeconds: 40, intervalSeconds: 0.2) {
                states(broadcast.events).last == "pushing" && states(broadcast.events).contains("reconnecting")
            }
            let resumedAfterS = Date().timeIntervalSince(restartedAt)
            #expect(resumed, "not publishing again 40 s after nginx came back: \(states(broadcast.events))")
            // 4 s of stream after the outage, counted at nginx.
            let grew = waitUntil(timeoutSeconds: 20, intervalSeconds: 0.5) {
                ((try? ReceivedStream.packets(receivedPath, stream: "v:0")) ?? []).count >= 120
            }
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            #expect(grew, "nginx received \(((try? ReceivedStream.packets(receivedPath, stream: "v:0")) ?? []).count) frames after the outage")

            // The waits grew: 2 s doubling to 30 s, each within a tenth of its step.
            let attempts = reconnections(broadcast.events)
            print("outage test: reconnections \(attempts.map { "#\($0.attempt) in \($0.nextRetryMs) ms" }), "
                  + "publishing again \(String(format: "%.1f", resumedAfterS)) s after nginx came back")
            #expect(attempts.map(\.attempt) == Array(1...max(1, attempts.count)), "\(attempts)")
            #expect(attempts.count >= 5 && attempts.count <= 8, "about 6 attempts in 60 s: \(attempts)")
            for (attempt, waitMs) in attempts {
                let stepMs = min(30_000, 2000 << min(attempt - 1, 10))
                #expect(waitMs >= stepMs * 9 / 10 && waitMs <= min(30_000, stepMs * 11 / 10),
                        "attempt \(attempt) waited \(waitMs) ms, step \(stepMs) ms")
            }
            let events = broadcast.events
            #expect(!events.contains { $0["type"] as? String == "error" }, "no give-up: \(events.filter { $0["type"] as? String == "error" })")
            // Every line, the reconnecting statuses and the state changes included, is valid against the schema.
            let validation = try ProcessRunner.run("/usr/bin/python3", [Repository.path("Tests/Fixtures/validate_events.py"),
                                                                        Repository.path("docs/events.schema.json"),
                                                                        broadcast.eventsPath])
            #expect(validation.exitCode == 0, "\(validation)")
            #expect(Array(states(events).prefix(5)) == ["capturing", "connecting", "pushing", "reconnecting", "pushing"],
                    "\(states(events))")

            // What arrived after the outage: a stream that decodes, of the pushed size.
            let stream = try MediaProbe.videoStream(receivedPath)
            #expect(stream["codec_name"] == "h264" && stream["width"] == "320" && stream["height"] == "240", "\(stream)")
            #expect(try MediaProbe.decodeErrors(receivedPath) == "", "what nginx got after the outage does not decode cleanly")

            // The local recording went on throughout: no hole in its sound, and every picture missing
            // from its video is one the pusher counted as skipped for a stall of its own (1105: the
            // machine, two cores shared, is busy; LoadTests checks that accounting), never the outage's
            // 60 s (1800 pictures).
            let video = try ReceivedStream.packets(recording, stream: "v:0").map(\.timeS).sorted()
            let audio = try ReceivedStream.packets(recording, stream: "a:0").map(\.timeS).sorted()
            let spanS = (video.last ?? 0) - (video.first ?? 0)
            let missing = zip(video, video.dropFirst()).reduce(0) { $0 + max(0, Int((($1.1 - $1.0) * 30).rounded()) - 1) }
            let skipped = events.last { $0["type"] as? String == "statistics" }?["videoSkippedFrames"] as? Int ?? -1
            let videoGapS = zip(video, video.dropFirst()).map { $1 - $0 }.max() ?? 99
            let audioGapS = zip(audio, audio.dropFirst()).map { $1 - $0 }.max() ?? 99
            let stalls = events.filter { $0["type"] as? String == "warning" && ($0["code"] as? Int) == 1105 }.count
            print("outage test: recording \(String(format: "%.1f", spanS)) s, \(video.count) pictures, \(missing) missing, "
                  + "\(skipped) skipped in \(stalls) stalls counted; longest gap video \(Int(videoGapS * 1000)) ms, "
                  + "audio \(Int(audioGapS * 1000)) ms")
            #expect(spanS >= 64, "the recording covers \(spanS) s, not the 3 s before, the 60 s outage and after")
            #expect(missing <= skipped, "\(missing) pictures missing from the recording, \(skipped) skipped counted")
            #expect(audioGapS <= 0.25, "a hole of \(audioGapS) s in the recording's sound")
            #expect(try MediaProbe.decodeErrors(recording) == "", "the recording does not decode cleanly")
        }
    }
}
