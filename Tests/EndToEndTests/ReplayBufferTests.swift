import Foundation
import LinuxSystem
import Testing
import TestSupport

extension SharedScreen {
    /// `--replay-buffer SECONDS` and `livepush ctl replay save` (issue 34): the last seconds of a push,
    /// written to a file after the fact while the push goes on, checked in the files it made.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct ReplayBufferTests {
        let livepush = BuiltProducts.path("livepush")
        /// The marker's tone, well apart from the test microphone's 1000 Hz (both whole cycles in a 5 ms window).
        static let markerHz = 3000.0

        private func ok(_ reply: (result: CommandResult, answer: [String: Any]?)) -> Bool {
            reply.result.exitCode == 0 && reply.answer?["ok"] as? Bool == true
        }

        private func temporaryFile(_ stem: String, _ ext: String = "mkv") -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(stem)).path + "." + ext
        }

        /// The `replaySaved` events so far, by path.
        private func saved(_ broadcast: LiveBroadcast) -> [String: [String: Any]] {
            var byPath: [String: [String: Any]] = [:]
            for event in broadcast.events where event["type"] as? String == "replaySaved" {
                if let path = event["path"] as? String { byPath[path] = event }
            }
            return byPath
        }

        /// Each picture of `path`: its time and its mean brightness (0 to 255); and the times of its
        /// keyframes, from the first packet's on (the first one should be at 0).
        private func pictures(_ path: String) throws -> (frames: [(timeS: Double, luma: Double)], keyframesS: [Double], firstIsKey: Bool) {
            let frames = try MarkerProbe.lumas(path)
            let packets = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                            "packet=pts_time,flags", "-of", "csv=p=0", path])
            #expect(packets.exitCode == 0, "\(packets)")
            let lines = packets.standardOutput.split(separator: "\n")
            let keyframes = lines.compactMap { line -> Double? in
                let fields = line.split(separator: ",")
                return fields.count >= 2 && fields[1].contains("K") ? Double(fields[0]) : nil
            }
            return (frames, keyframes, lines.first?.split(separator: ",").dropFirst().first?.contains("K") == true)
        }

        /// A 10 s replay buffer under a CPU hog; 12 s in, a flash on the captured screen and a tone in
        /// the music at the same moment, then `replay save` twice in a row 4 s later: each file starts
        /// with a keyframe, holds 10 s (at most a GOP more), decodes cleanly, and holds the flash and
        /// the tone at the file's end minus their age. A file that exists, a wrong extension and a
        /// missing directory are refused with a reason; the statistics show the buffer's size.
        @Test func aReplayHoldsTheMarkerAtItsAgeAndSavesTwiceInARow() throws {
            let key = UniqueName.make("replay")
            let first = temporaryFile("replay-a"), second = temporaryFile("replay-b", "mp4")
            defer { if ProcessInfo.processInfo.environment["KEEP_REPLAYS"] == nil { for file in [first, second] { try? FileManager.default.removeItem(atPath: file) } } }
            let tone = try SoundSignals.toneFile(ext: "wav", codec: "pcm_s16le", frequencyHz: Int(Self.markerHz),
                                                 amplitude: 0.5, seconds: 0.4, sampleRateHz: 48000)
            defer { try? FileManager.default.removeItem(atPath: tone) }
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "solid", "202020"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(),
                "--replay-buffer", "10", "--quiet", "--duration", "60",
            ])
            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            Thread.sleep(forTimeInterval: 12)  // the buffer fills: part of the stimulus

            // The marker: the screen turns white and the tone starts; both back to nothing 0.4 s later.
            // Each happened between two readings of the clock this process takes (it may be slow to
            // see the painter's answer under the hog): the bounds the checks below allow.
            let paintedBefore = painter.outputSoFar.components(separatedBy: "painted").count
            let flashSentNs = Int(MonotonicClock.nowNs())
            painter.send(line: "pattern solid ffffff")
            let painted = waitUntil(timeoutSeconds: 5, intervalSeconds: 0.002) {
                painter.outputSoFar.components(separatedBy: "painted").count > paintedBefore
            }
            let flashSeenNs = Int(MonotonicClock.nowNs())
            #expect(painted, "the painter did not paint: \(painter.outputSoFar)")
            let toneSentNs = Int(MonotonicClock.nowNs())
            #expect(ok(try broadcast.ctl(["bgm", "start", tone])))
            Thread.sleep(forTimeInterval: 0.4)
            painter.send(line: "pattern solid 202020")
            Thread.sleep(forTimeInterval: 3.6)  // the marker's age at the save: about 4 s

            let status = try broadcast.ctl(["status"]).answer?["result"] as? [String: Any]
            let statistics = status?["statistics"] as? [String: Any]
            let bufferBytes = try #require(statistics?["replayBufferBytes"] as? Int, "\(String(describing: statistics))")
            #expect(status?["replayBufferSeconds"] as? Int == 10, "\(String(describing: status))")
            let firstSave = try broadcast.ctl(["replay", "save", first])
            let secondSave = try broadcast.ctl(["replay", "save", second])
            #expect(ok(firstSave), "\(firstSave)")
            #expect(ok(secondSave), "\(secondSave)")
            let refusals = [(first, "exists"), (temporaryFile("replay-c", "txt"), ".mkv, .mp4 or .flv"),
                            ("/nonexistent-\(key)/replay.mkv", "missing or not writable")].map { file, reason in
                (try? broadcast.ctl(["replay", "save", file]), reason)
            }
            let done = waitUntil(timeoutSeconds: 20) { saved(broadcast).count >= 2 }
            #expect(done, "replaySaved: \(saved(broadcast))")
            hog.stop()
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            for (reply, reason) in refusals {
                let reply = try #require(reply)
                #expect(reply.result.exitCode != 0 && reply.answer?["ok"] as? Bool == false, "\(reply)")
                #expect(reply.result.standardError.contains(reason), "\(reply.result)")
            }

            // A control event is written once its command was carried out: after the save's snapshot,
            // after the music started.
            let controls = broadcast.events.filter { $0["type"] as? String == "control" }
            let saveNs = controls.filter { $0["command"] as? String == "replay" }.compactMap { $0["monotonicNs"] as? Int }
            #expect(saveNs.count == 2, "\(controls)")
            let toneStartedNs = try #require(controls.first { $0["command"] as? String == "bgm" }?["monotonicNs"] as? Int)
            print("replay: buffer \(bufferBytes) bytes; flash painted within \((flashSeenNs - flashSentNs) / 1_000_000) ms, "
                + "the tone started within \((toneStartedNs - toneSentNs) / 1_000_000) ms; saved \(Double((saveNs.first ?? 0) - flashSentNs) / 1e9) s after the flash")
            #expect(bufferBytes > 100_000 && bufferBytes < 10_000_000, "\(bufferBytes) bytes for 10 s of 320x240")
            for (file, savedNs) in zip([first, second], saveNs) {
                let event = try #require(saved(broadcast)[file], "no replaySaved for \(file)")
                #expect(event["code"] as? Int == 0, "\(event)")
                #expect(try MediaProbe.decodeErrors(file).isEmpty, "\(file) does not decode cleanly")
                let (frames, keyframesS, firstIsKey) = try pictures(file)
                #expect(firstIsKey, "\(file) does not start with a keyframe")
                let startS = try #require(frames.first?.timeS), lastS = try #require(frames.last?.timeS)
                let endS = lastS + 1.0 / 30
                let flashS = try #require(frames.first { $0.luma > 128 }?.timeS, "no flash in \(file)")
                let toneS = try #require(try MarkerProbe.toneStartS(file, frequencyHz: Self.markerHz), "no tone in \(file)")
                let durationMs = event["durationMs"] as? Int ?? -1
                print("replay \(file): pictures \(startS) to \(endS) s (\(frames.count), event \(durationMs) ms); flash at \(flashS) s "
                    + "(end minus \(endS - flashS) s), tone at \(toneS) s (\(Int((toneS - flashS) * 1000)) ms after the flash)")
                #expect(startS.magnitude < 0.001, "\(file) starts at \(startS) s")
                // At least the 10 s asked for, and no more than that from the GOP it starts in: its first
                // keyframe 10 s or more before its last picture, the next one less than 10 s before.
                #expect(lastS - startS >= 10 - 0.001, "\(file) holds \(endS - startS) s")
                let secondKeyS = try #require(keyframesS.dropFirst().first, "one keyframe in \(file): \(keyframesS)")
                #expect(secondKeyS > lastS - 10, "\(file): keyframes at \(keyframesS), the last picture at \(lastS) s")
                #expect(abs(Double(durationMs) / 1000 - (endS - startS)) < 0.05, "event \(durationMs) ms for \(endS - startS) s")
                // The marker at the end minus its age. The newest picture is the one encoded when the
                // save came, and the marker is seen a picture or two after it happened (capture,
                // encode, 2 to 4 pictures under the hog): in the file it is at most its age before the
                // end, and at most 0.15 s less.
                let frameS = 1.0 / 30
                let flashRange = (endS - Double(savedNs - flashSentNs) / 1e9 - frameS)...(endS - Double(savedNs - flashSeenNs) / 1e9 + 0.15)
                #expect(flashRange.contains(flashS), "flash at \(flashS) s, expected in \(flashRange)")
                let toneRange = (endS - Double(savedNs - toneSentNs) / 1e9 - 0.03)...(endS - Double(savedNs - toneStartedNs) / 1e9 + 0.15)
                #expect(toneRange.contains(toneS), "tone at \(toneS) s, expected in \(toneRange)")
                print("replay \(file): flash expected in \(flashRange), tone in \(toneRange)")
            }
            #expect(!broadcast.command.errorSoFar.contains(key))
        }

        /// The server goes away (a private nginx stopped): while the push reconnects, `replay save`
        /// still writes the last 5 s, complete and decodable, and the push goes on.
        @Test func aReplaySavedDuringAReconnectIsComplete() throws {
            let nginx = try PrivateNginx()
            defer { nginx.stop() }
            let key = UniqueName.make("replayout")
            let file = temporaryFile("replay-outage")
            defer { try? FileManager.default.removeItem(atPath: file) }
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "square", "1e2a3a", "ffcc00", "120", "8"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", nginx.rtmpURL + "/record/\(key)", "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(),
                "--replay-buffer", "5", "--quiet", "--duration", "60",
            ])
            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            #expect(try broadcast.waitUntilPublishing(timeoutSeconds: 20), "\(broadcast.command.errorSoFar)")
            Thread.sleep(forTimeInterval: 7)  // more than the buffer holds
            nginx.stop()
            let reconnecting = waitUntil(timeoutSeconds: 10) {
                broadcast.events.contains { $0["type"] as? String == "state" && $0["state"] as? String == "reconnecting" }
            }
            #expect(reconnecting, "no reconnecting state: \(broadcast.events.suffix(5))")
            let save = try broadcast.ctl(["replay", "save", file])
            #expect(ok(save), "\(save)")
            let done = waitUntil(timeoutSeconds: 20) { saved(broadcast)[file] != nil }
            #expect(done, "no replaySaved: \(broadcast.events.suffix(5))")
            #expect(broadcast.command.isRunning, "the push ended: \(broadcast.command.errorSoFar)")
            hog.stop()
            _ = broadcast.stop()
            let event = try #require(saved(broadcast)[file])
            #expect(event["code"] as? Int == 0, "\(event)")
            #expect(try MediaProbe.decodeErrors(file).isEmpty, "\(file) does not decode cleanly")
            let (frames, keyframesS, firstIsKey) = try pictures(file)
            #expect(firstIsKey, "the replay does not start with a keyframe")
            let lastS = try #require(frames.last?.timeS)
            print("replay during a reconnect: \(frames.count) pictures to \(lastS) s, keyframes \(keyframesS), event \(event)")
            #expect(lastS >= 5 - 0.001, "the replay holds \(lastS) s")
            #expect((keyframesS.dropFirst().first ?? 0) > lastS - 5, "keyframes at \(keyframesS), the last picture at \(lastS) s")
        }

        /// The dashboard of a run with a replay buffer shows Save replay; headless Chromium clicks it and
        /// the replay is written to `replay-YYYYMMDD-HHMMSS.mkv` in `--replay-dir`, complete. The page's
        /// own request naming a file is refused: the page never chooses where a file goes.
        @Test func theDashboardSavesAReplayToItsOwnName() throws {
            let key = UniqueName.make("dashreplay")
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("replays")).path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "square", "1e2a3a", "ffcc00", "120", "8"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic", "--quiet", "--dashboard", "0",
                "--replay-buffer", "3", "--replay-dir", directory, "--duration", "90",
            ])
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            Thread.sleep(forTimeInterval: 4)  // the buffer fills
            let screenshot = "/tmp/livepush-dashboard-replay.png"
            let check = try ProcessRunner.run("python3", [Repository.path("Tests/Fixtures/browser_check.py"), "replay",
                                                          try broadcast.dashboardURL(), screenshot], timeoutSeconds: 90)
            #expect(check.exitCode == 0, "\(check)")
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(check.standardOutput.utf8)) as? [String: Any],
                                    "\(check)")
            let saving = try #require(seen["saving"] as? String, "\(seen)")
            let done = waitUntil(timeoutSeconds: 20) { saved(broadcast)[saving] != nil }
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            print("dashboard Save replay: \(seen); screenshot \(screenshot)")
            #expect(seen["buttonShown"] as? Bool == true, "\(seen)")
            #expect(seen["ok"] as? Bool == true, "\(seen)")
            #expect(done, "no replaySaved for \(saving)")
            #expect(saving.hasPrefix(directory + "/replay-") && saving.hasSuffix(".mkv"), "\(saving)")
            #expect(saved(broadcast)[saving]?["code"] as? Int == 0)
            #expect(try MediaProbe.decodeErrors(saving).isEmpty)
            let refusal = seen["pathRefusal"] as? String ?? ""
            #expect(refusal.contains("\"ok\":false") && refusal.contains("dashboard takes only"), "\(refusal)")
            #expect(!FileManager.default.fileExists(atPath: "/tmp/chosen-by-page.mkv"))
        }

        /// Bad replay options are refused before anything starts (exit 2), saying what is wrong.
        @Test func badReplayOptionsAreRefusedBeforeAnythingStarts() throws {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("replay-bad")).path
            let cases: [([String], String)] = [
                (["--replay-buffer", "0"], "give whole seconds, 1 to 600"),
                (["--replay-buffer", "601"], "give whole seconds, 1 to 600"),
                (["--replay-buffer", "ten"], "give whole seconds, 1 to 600"),
                (["--replay-buffer", "10", "--replay-dir", file + "-missing"], "no such directory"),
                (["--replay-dir", NSTemporaryDirectory()], "give --replay-buffer SECONDS as well"),
            ]
            for (options, message) in cases {
                let result = try ProcessRunner.run(livepush, ["screen", file + ".mkv", "--display", try TestEnvironment.display(),
                                                              "--no-mic", "--duration", "5"] + options, timeoutSeconds: 20)
                #expect(result.exitCode == 2, "\(options): \(result)")
                #expect(result.standardError.contains(message), "\(options): \(result.standardError)")
                #expect(!FileManager.default.fileExists(atPath: file + ".mkv"), "\(options) started a recording")
            }
        }
    }
}
