import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush ctl record` (issue 34): a recording started, paused, resumed and stopped while a
    /// push goes on, checked in the file it made.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct RecordControlTests {
        let livepush = BuiltProducts.path("livepush")

        private func ok(_ reply: (result: CommandResult, answer: [String: Any]?)) -> Bool {
            reply.result.exitCode == 0 && reply.answer?["ok"] as? Bool == true
        }

        private func eventNs(_ events: [[String: Any]], _ type: String) throws -> Int {
            let event = try #require(events.first { $0["type"] as? String == type }, "no \(type) event")
            return try #require(event["monotonicNs"] as? Int, "\(event)")
        }

        /// Started 2 s into a push, recorded 3 s, paused 3 s, resumed, recorded 3 s and stopped, under
        /// a CPU hog: the file starts on a keyframe, holds the two recorded stretches end to end (its
        /// length within one GOP of theirs), with no gap where it was paused, in its pictures or its
        /// sound; each command is refused when it makes no sense, and each step is an event.
        @Test func startPauseResumeAndStopARecordingWhileThePushGoesOn() throws {
            let key = UniqueName.make("ctlrecord")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("ctlrecord")).path + ".mkv"
            defer { try? FileManager.default.removeItem(atPath: file) }
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "square", "1e2a3a", "ffcc00", "120", "8"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(),
                "--quiet", "--duration", "60",
            ])
            let hog = try CPUHog(count: 2)
            defer { hog.stop() }
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            #expect(!ok(try broadcast.ctl(["record", "stop"])), "stop with nothing recorded")
            #expect(!ok(try broadcast.ctl(["record", "pause"])), "pause with nothing recorded")
            Thread.sleep(forTimeInterval: 2)  // the push runs on its own first
            let started = try broadcast.ctl(["record", "start", file])
            #expect(ok(started), "\(started)")
            #expect(!ok(try broadcast.ctl(["record", "start", file + ".mkv"])), "a second recording")
            Thread.sleep(forTimeInterval: 3)  // the first stretch
            #expect(ok(try broadcast.ctl(["record", "pause"])))
            let status = try broadcast.ctl(["status"]).answer?["result"] as? [String: Any]
            #expect(status?["recordingPaused"] as? Bool == true, "\(String(describing: status))")
            #expect(!ok(try broadcast.ctl(["record", "pause"])), "paused twice")
            Thread.sleep(forTimeInterval: 3)  // left out of the file
            #expect(ok(try broadcast.ctl(["record", "resume"])))
            Thread.sleep(forTimeInterval: 3)  // the second stretch
            let stopped = try broadcast.ctl(["record", "stop"])
            #expect(ok(stopped), "\(stopped)")
            #expect(!ok(try broadcast.ctl(["record", "resume"])), "resume after stop")
            Thread.sleep(forTimeInterval: 1)
            hog.stop()
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")

            let events = broadcast.events
            let beginNs = try eventNs(events, "recordBegin"), pausedNs = try eventNs(events, "recordPaused")
            let resumedNs = try eventNs(events, "recordResumed"), completeNs = try eventNs(events, "recordComplete")
            let complete = try #require(events.first { $0["type"] as? String == "recordComplete" })
            #expect(complete["code"] as? Int == 0, "\(complete)")
            let expectedS = Double(pausedNs - beginNs + completeNs - resumedNs) / 1e9

            let video = try MediaProbe.packets(file, stream: "v:0"), audio = try MediaProbe.packets(file, stream: "a:0")
            let first = try #require(video.first, "no video in \(file)")
            #expect(first.key, "the file's first picture is not a keyframe")
            let sorted = video.map(\.timeS).sorted()
            let videoS = (sorted.last ?? 0) - (sorted.first ?? 0)
            let videoGap = zip(sorted, sorted.dropFirst()).map { (atS: $0, gapS: $1 - $0) }.max { $0.gapS < $1.gapS }
            let audioGap = zip(audio, audio.dropFirst()).map { (atS: $0.timeS, gapS: $1.timeS - ($0.timeS + $0.durationS)) }
                .max { $0.gapS < $1.gapS }
            let videoGapS = videoGap?.gapS ?? 0, audioGapS = audioGap?.gapS ?? 0
            let audioS = (audio.last.map { $0.timeS + $0.durationS } ?? 0) - (audio.first?.timeS ?? 0)
            print("ctl record: recorded \(expectedS) s by the events; the file has \(videoS) s of pictures "
                + "(\(video.count), largest gap \(videoGapS) s at \(videoGap?.atS ?? -1) s) and \(audioS) s of sound (largest gap "
                + "\(audioGapS) s at \(audioGap?.atS ?? -1) s); first picture at \(sorted.first ?? -1) s, first sound at "
                + "\(audio.first?.timeS ?? -1) s; paused after \(Double(pausedNs - beginNs) / 1e9) s")
            // The start waits for a keyframe (one is asked for at once) and so does the resume: one GOP (2 s) at most.
            #expect(videoS > expectedS - 2 && videoS < expectedS + 0.5, "\(videoS) s of pictures for \(expectedS) s recorded")
            #expect(videoGapS < 0.5, "a gap of \(videoGapS) s between pictures (the pause lasted 3 s)")
            #expect(audioGapS < 0.025, "a gap of \(audioGapS) s in the sound's timestamps")
            #expect(abs(audioS - videoS) < 0.5, "\(audioS) s of sound beside \(videoS) s of pictures")
            #expect(!broadcast.command.errorSoFar.contains(key))
        }

        /// The dashboard of a run that records shows the recording with its buttons, and Pause,
        /// Resume, Split and Stop do what they say (headless Chromium clicks them; both files are complete).
        @Test func theDashboardPausesResumesAndStopsTheRecording() throws {
            let key = UniqueName.make("dashrecord")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("dashrecord")).path + ".mkv"
            let next = (file as NSString).deletingPathExtension + "-002.mkv"
            defer { try? FileManager.default.removeItem(atPath: file); try? FileManager.default.removeItem(atPath: next) }
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "square", "1e2a3a", "ffcc00", "120", "8"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--record", file, "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic", "--quiet", "--dashboard", "0",
                "--duration", "90",
            ])
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            let url = try broadcast.dashboardURL()
            let screenshot = "/tmp/livepush-dashboard-recording.png"
            let check = try ProcessRunner.run("python3", [Repository.path("Tests/Fixtures/browser_check.py"), "record",
                                                          url, screenshot], timeoutSeconds: 90)
            #expect(check.exitCode == 0, "\(check)")
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(check.standardOutput.utf8)) as? [String: Any],
                                    "\(check)")
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            print("dashboard with a recording: \(seen); screenshot \(screenshot)")
            #expect(seen["recordingShown"] as? Bool == true, "\(seen)")
            #expect(seen["pausedInStatus"] as? Bool == true, "\(seen)")
            #expect((seen["stateWhilePaused"] as? String ?? "").contains("recording paused"), "\(seen)")
            #expect(seen["resumedInStatus"] as? Bool == true, "\(seen)")
            #expect(seen["splitInStatus"] as? Bool == true && seen["splitPath"] as? String == next, "\(seen)")
            #expect(seen["stoppedInStatus"] as? Bool == true, "\(seen)")
            let types = broadcast.events.compactMap { $0["type"] as? String }.filter { $0.hasPrefix("record") && $0 != "recordProgress" }
            #expect(types == ["recordBegin", "recordPaused", "recordResumed", "recordSplit", "recordComplete"], "\(types)")
            #expect(try MediaProbe.decodeErrors(file).isEmpty)
            #expect(try MediaProbe.decodeErrors(next).isEmpty)
        }

        /// Runs `livepush` with the words `arguments(FILE)` gives (FILE: the recording) for 6 s on a
        /// scrolling screen of `size`; the recording's video bitrate in its first 2 s and in 3-5 s.
        private func recordedKbps(_ arguments: (String) throws -> [String], size: String) throws -> (first: Int, later: Int) {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("rectarget")).path + ".mkv"
            defer { try? FileManager.default.removeItem(atPath: file) }
            let (painter, _) = try X11Painter.start(["--geometry", size + "+0+0", "scroll"])
            defer { painter.closeInput(); _ = painter.finish() }
            let (width, height) = (size.split(separator: "x")[0], size.split(separator: "x")[1])
            let broadcast = try LiveBroadcast(livepush: livepush, try arguments(file) + [
                "--display", try TestEnvironment.display(), "--region", "0,0,\(width),\(height)", "--no-mic", "--quiet",
                "--duration", "6",
            ])
            let deadline = Date().addingTimeInterval(60)
            while broadcast.command.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            let result = broadcast.command.finish(timedOut: broadcast.command.isRunning)
            #expect(result.exitCode == 0, "\(result)")
            let video = try ReceivedStream.packets(file, stream: "v:0")
            return (ReceivedStream.kbps(video, from: 0, to: 2), ReceivedStream.kbps(video, from: 3, to: 5))
        }

        /// A recording with no destination runs at its target bitrate from the first picture: the
        /// initial bitrate (300 kbps here) is for probing a network, and auto bitrate used to climb
        /// from it for about 11 s though nothing is congested on a disk. Content that needs more
        /// than the target (scrolling text), so the rate is the encoder's, not the picture's.
        @Test func aRecordingAloneRunsAtItsTargetBitrateFromTheFirstSecond() throws {
            let kbps = try recordedKbps({ file in
                ["screen", file, "--resolution", "320x240", "--quality", "custom", "--bitrate", "1200", "--min-bitrate", "200",
                 "--initial-bitrate", "300"]
            }, size: "320x240")
            print("recording alone, target 1200 kbps, initial 300: \(kbps.first) kbps in its first 2 s, \(kbps.later) kbps in 3-5 s")
            #expect(kbps.first >= 900, "the first 2 s at \(kbps.first) kbps (target 1200)")
            #expect(kbps.later >= 900, "3-5 s at \(kbps.later) kbps (target 1200)")
        }

        /// Beside a push (the same encode), the recording starts at the target too when no initial
        /// bitrate was chosen: resolution-first at 360p is 1000 kbps, its initial 600.
        @Test func aRecordingBesideAPushRunsAtItsTargetBitrateFromTheFirstSecond() throws {
            let kbps = try recordedKbps({ file in
                ["push", try TestEnvironment.recordURL(key: UniqueName.make("pushtarget")), "--record", file, "--resolution", "360p"]
            }, size: "640x360")
            print("recording beside a push, 360p target 1000 kbps, initial 600: \(kbps.first) kbps in its first 2 s, "
                  + "\(kbps.later) kbps in 3-5 s")
            #expect(kbps.first >= 800, "the first 2 s at \(kbps.first) kbps (target 1000)")
        }
    }
}
