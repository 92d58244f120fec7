import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// Issue 35, item 2: every SDK control from `livepush ctl`, measured where it changes what
    /// viewers get: the mirrors (in nginx's pictures and the preview window's pixels), restart and
    /// reconnect after a give-up (the stream back at a private nginx), a snapshot series (the PNG
    /// files and their spacing), and the settings in `status` and the events. Under a CPU hog.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct ControlSettingsTests {
        let livepush = BuiltProducts.path("livepush")

        private func temporary(_ name: String, _ ext: String) -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(name)).path + "." + ext
        }

        private func settings(_ broadcast: LiveBroadcast) throws -> [String: Any] {
            let answer = try broadcast.ctl(["status"]).answer
            let result = try #require(answer?["result"] as? [String: Any], "no status: \(String(describing: answer))")
            return try #require(result["settings"] as? [String: Any], "no settings in status: \(result.keys.sorted())")
        }

        /// The brightness of the left and right quarters of every decoded picture of `path`, in
        /// order (ffmpeg scales each to 16x4 grey).
        private func leftRight(_ path: String) throws -> [(left: Int, right: Int)] {
            let raw = temporary("leftright", "gray")
            defer { try? FileManager.default.removeItem(atPath: raw) }
            let result = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", path, "-an", "-vf", "scale=16:4",
                                                          "-f", "rawvideo", "-pix_fmt", "gray", raw], timeoutSeconds: 60)
            #expect(result.exitCode == 0, "\(result.standardError)")
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
            return stride(from: 0, to: bytes.count - 63, by: 64).map { start in
                var left = 0, right = 0
                for row in 0..<4 {
                    for column in 0..<4 { left += Int(bytes[start + row * 16 + column]) }
                    for column in 12..<16 { right += Int(bytes[start + row * 16 + column]) }
                }
                return (left / 16, right / 16)
            }
        }


        private func previewWindow(_ broadcast: LiveBroadcast) throws -> String? {
            let info = try ProcessRunner.run("xwininfo", ["-display", try TestEnvironment.display(),
                                                          "-name", "LivePush preview: \(broadcast.name)"])
            return info.standardOutput.split(separator: "\n").first { $0.contains("Window id:") }
                .flatMap { $0.split(separator: " ").first { $0.hasPrefix("0x") } }.map(String.init)
        }

        /// Whether the preview's left edge is bright (the white bar: the screen as it is).
        private func previewLeftIsWhite(_ window: String) throws -> Bool? {
            guard let pixels = try X11Painter.windowPixels(window), pixels.count == 320 * 240 * 3 else { return nil }
            let index = (120 * 320 + 10) * 3
            return pixels[index] > 200 ? true : pixels[index] < 60 ? false : nil
        }

        @Test(.timeLimit(.minutes(10)))
        func theMirrorsFromCtlAreIndependentAndReachNginxAndThePreview() throws {
            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            let key = UniqueName.make("mirror")
            // Eight vertical bars, white on the left to black on the right.
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "bars"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic", "--quiet", "--duration", "120",
                "--preview", "--preview-geometry", "320x240+1560+700",
            ], environment: ["DISPLAY": try TestEnvironment.display()])
            #expect(try broadcast.waitUntilPublishing(timeoutSeconds: 20), "\(broadcast.command.errorSoFar)")
            var window = try #require(try { () throws -> String? in
                var found: String?
                _ = try waitUntil(timeoutSeconds: 10, intervalSeconds: 0.1) {
                    found = try previewWindow(broadcast)
                    return found != nil
                }
                return found
            }(), "no preview window")
            func previewShows(white: Bool) throws -> Bool {
                try waitUntil(timeoutSeconds: 10, intervalSeconds: 0.1) { try previewLeftIsWhite(window) == white }
            }
            #expect(try previewShows(white: true), "the preview shows the screen as it is")
            Thread.sleep(forTimeInterval: 2)  // 2 s unmirrored at nginx: part of the stimulus

            // The stream mirrored: nginx gets the black bar on the left; the preview does not follow.
            let mirrored = try broadcast.ctl(["mirror", "push", "on"])
            #expect(mirrored.result.exitCode == 0, "\(mirrored.result)")
            #expect(try settings(broadcast)["pushMirror"] as? Bool == true)
            Thread.sleep(forTimeInterval: 1)
            #expect(try previewShows(white: true), "the push mirror alone leaves the preview as the screen is")
            // The preview mirrored too: now it is, whatever the stream does.
            #expect(try broadcast.ctl(["mirror", "preview", "on"]).result.exitCode == 0)
            #expect(try previewShows(white: false), "the preview mirror mirrors the preview")
            #expect(try settings(broadcast)["previewMirror"] as? Bool == true)
            Thread.sleep(forTimeInterval: 2)  // 2 s mirrored at nginx

            // Closed and opened again from ctl: the new window keeps the preview mirror.
            #expect(try broadcast.ctl(["preview", "close"]).result.exitCode == 0)
            #expect(try settings(broadcast)["previewOpen"] as? Bool == false)
            #expect(try waitUntil(timeoutSeconds: 10) { try previewWindow(broadcast) == nil }, "the preview window stayed")
            let opened = try broadcast.ctl(["preview", "open"])
            #expect(opened.result.exitCode == 0, "\(opened.result)")
            #expect(try settings(broadcast)["previewOpen"] as? Bool == true)
            _ = try waitUntil(timeoutSeconds: 10, intervalSeconds: 0.1) {
                if let found = try previewWindow(broadcast) { window = found }
                return try previewWindow(broadcast) != nil
            }
            #expect(try previewShows(white: false), "the reopened preview is mirrored still")

            #expect(try broadcast.ctl(["mirror", "push", "off"]).result.exitCode == 0)
            Thread.sleep(forTimeInterval: 2)  // 2 s unmirrored again
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")

            // At nginx: unmirrored, then mirrored, then unmirrored, each for about 2 s or more, no
            // picture in between, and no hole in the stream where the mirror changed.
            let path = try TestEnvironment.recordedFile(key: key).path
            let pictures = try leftRight(path)
            var runs: [(whiteLeft: Bool, count: Int)] = []
            for picture in pictures where abs(picture.left - picture.right) > 100 {
                let whiteLeft = picture.left > picture.right
                if runs.last?.whiteLeft == whiteLeft { runs[runs.count - 1].count += 1 } else { runs.append((whiteLeft, 1)) }
            }
            // Before the first clear picture, the stream may open on the capture's first black frames.
            let firstClear = pictures.firstIndex { abs($0.left - $0.right) > 100 } ?? pictures.count
            let unclear = pictures.indices.filter { $0 > firstClear && abs(pictures[$0].left - pictures[$0].right) <= 100 }
            print("mirror test: \(pictures.count) pictures at nginx, runs \(runs.map { "\($0.whiteLeft ? "as is" : "mirrored") \($0.count)" }), "
                  + "\(firstClear) unclear at the start, then \(unclear.count) neither at \(unclear) "
                  + "\(unclear.map { "\(pictures[$0])" })")
            #expect(runs.map(\.whiteLeft) == [true, false, true], "as is, mirrored, as is: \(runs.map { ($0.whiteLeft, $0.count) })")
            #expect(runs.allSatisfy { $0.count >= 30 }, "each lasted 2 s or more at 30 fps: \(runs.map(\.count))")
            #expect(unclear.isEmpty, "\(unclear.count) pictures neither mirrored nor not")
            // No hole where the mirror changed: every picture missing at nginx is one the pusher counted
            // as skipped (its ticks lost to the hog), and none is a long hole.
            let times = try MediaProbe.videoFrameTimes(path)
            let gapS = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? 99
            let missing = zip(times, times.dropFirst()).reduce(0) { $0 + max(0, Int((($1.1 - $1.0) * 30).rounded()) - 1) }
            let skipped = broadcast.events.last { $0["type"] as? String == "statistics" }?["videoSkippedFrames"] as? Int ?? -1
            #expect(missing <= skipped, "\(missing) pictures missing at nginx, \(skipped) counted skipped")
            #expect(gapS < 1, "a hole of \(gapS) s in what nginx received")
        }

        /// The dashboard's settings in headless Chromium at 1366 x 768 (a common laptop): each one
        /// used as a person would changes the broadcast (its status, and the mirror at nginx).
        @Test(.timeLimit(.minutes(10)))
        func theDashboardsSettingsSteerTheBroadcastAtALaptopsWidth() throws {
            let key = UniqueName.make("dashsettings")
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "bars"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(), "--quiet",
                "--dashboard", "0", "--duration", "90",
            ])
            #expect(try broadcast.waitUntilPublishing(timeoutSeconds: 20), "\(broadcast.command.errorSoFar)")
            let url = try broadcast.dashboardURL()
            let screenshot = "/tmp/livepush-dashboard-settings.png"
            let check = try ProcessRunner.run("python3", [Repository.path("Tests/Fixtures/browser_check.py"), "settings",
                                                          url, screenshot], timeoutSeconds: 90)
            #expect(check.exitCode == 0, "\(check)")
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(check.standardOutput.utf8)) as? [String: Any],
                                    "\(check)")
            print("dashboard settings: \(seen); screenshot \(screenshot)")
            for field in ["loaded", "mirrorUnchecked", "pushMirrorInStatus", "denoiseInStatus", "agcInStatus", "micVolumeInStatus",
                          "restartAnswered", "controlsShowStatus", "fits"] {
                #expect(seen[field] as? Bool == true, "\(field): \(seen)")
            }
            #expect((seen["restartAnswer"] as? [String: Any])?["ok"] as? Bool == true, "\(seen)")
            #expect(try broadcast.waitUntilPublishing(timeoutSeconds: 15), "publishing again after the dashboard's restart")
            Thread.sleep(forTimeInterval: 2)  // 2 s of the mirrored stream after the restart
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            // nginx's file was opened anew by the restart's publish: what it holds is mirrored.
            let pictures = try leftRight(try TestEnvironment.recordedFile(key: key).path).filter { abs($0.left - $0.right) > 100 }
            #expect(pictures.count >= 30 && pictures.allSatisfy { $0.left < $0.right },
                    "\(pictures.count) pictures after the restart, \(pictures.filter { $0.left > $0.right }.count) not mirrored")
        }

        @Test(.timeLimit(.minutes(10)))
        func restartAndAReconnectAfterGivingUpBringTheStreamBack() throws {
            let nginx = try PrivateNginx()
            defer { nginx.stop() }
            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            let key = UniqueName.make("giveup")
            let recording = temporary("giveup", "mkv")
            defer { try? FileManager.default.removeItem(atPath: recording) }
            // --retry-count 0: the first failure gives up, as a person who chose that would see it.
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", nginx.rtmpURL + "/record/\(key)", "--record", recording, "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(), "--quiet",
                "--retry-count", "0",
            ])
            #expect(try broadcast.waitUntilPublishing(timeoutSeconds: 20), "\(broadcast.command.errorSoFar)")
            func publishes() -> Int {
                broadcast.events.filter { $0["type"] as? String == "pushStatus" && $0["status"] as? String == "connectSuccess" }.count
            }
            let receivedPath = nginx.recordDirectory + "/\(key).flv"

            // restart: a new connection to the same destination, the stream on.
            let restarted = try broadcast.ctl(["restart"])
            #expect(restarted.result.exitCode == 0, "\(restarted.result)")
            #expect(waitUntil(timeoutSeconds: 15) { publishes() >= 2 }, "no second publish after restart: \(publishes())")
            #expect(try broadcast.waitUntilPublishing(timeoutSeconds: 15))

            // The server goes away; with no retries the destination gives up, the recording goes on.
            nginx.stop()
            let failed = waitUntil(timeoutSeconds: 20, intervalSeconds: 0.2) {
                ((try? broadcast.ctl(["status"]).answer?["result"] as? [String: Any]) ?? nil)?["state"] as? String == "failed"
            }
            #expect(failed, "never failed: \(broadcast.events.suffix(4))")
            #expect(broadcast.command.isRunning, "the run ended: \(broadcast.command.errorSoFar)")
            try? FileManager.default.moveItem(atPath: receivedPath, toPath: receivedPath + ".before")

            // Back, and reconnect is accepted exactly now: the destination publishes again.
            try nginx.start()
            let reconnect = try broadcast.ctl(["reconnect"])
            #expect(reconnect.result.exitCode == 0, "reconnect after giving up: \(reconnect.result)")
            #expect(try broadcast.waitUntilPublishing(timeoutSeconds: 20), "not publishing after reconnect")
            let grew = waitUntil(timeoutSeconds: 20, intervalSeconds: 0.5) {
                ((try? ReceivedStream.packets(receivedPath, stream: "v:0")) ?? []).count >= 60
            }
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            #expect(grew, "nginx received \(((try? ReceivedStream.packets(receivedPath, stream: "v:0")) ?? []).count) pictures after reconnect")
            #expect(try MediaProbe.decodeErrors(receivedPath) == "", "what nginx got after reconnect does not decode cleanly")
            let controls = broadcast.events.filter { $0["type"] as? String == "control" }.compactMap { $0["command"] as? String }
            #expect(controls == ["restart", "reconnect"], "\(controls)")
            let audio = try ReceivedStream.packets(recording, stream: "a:0").map(\.timeS).sorted()
            let audioGapS = zip(audio, audio.dropFirst()).map { $1 - $0 }.max() ?? 99
            #expect(audioGapS <= 0.25, "a hole of \(audioGapS) s in the recording's sound across the give-up")
        }

        @Test(.timeLimit(.minutes(10)))
        func aSnapshotSeriesAndEverySettingShowInFilesStatusAndEvents() throws {
            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "screen", temporary("settings", "mkv"), "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                "--resolution", "320x240", "--mic", try TestEnvironment.microphone(), "--quiet", "--duration", "120",
            ])
            #expect(try waitUntil(timeoutSeconds: 20, intervalSeconds: 0.2) {
                ((try? broadcast.ctl(["status"]).answer?["result"] as? [String: Any]) ?? nil)?["capturing"] as? Bool == true
            }, "\(broadcast.command.errorSoFar)")

            // Three pictures 500 ms apart: FILE-1.png to FILE-3.png, each a 320x240 PNG.
            let base = temporary("series", "png")
            let files = (1...3).map { String(base.dropLast(4)) + "-\($0).png" }
            defer { files.forEach { try? FileManager.default.removeItem(atPath: $0) } }
            let started = Date()
            let series = try broadcast.ctl(["snapshot", base, "--count", "3", "--interval", "500"])
            let tookS = Date().timeIntervalSince(started)
            #expect(series.result.exitCode == 0, "\(series.result)")
            let written = (series.answer?["result"] as? [String: Any])?["snapshots"] as? [String]
            #expect(written == files, "\(String(describing: written))")
            for file in files {
                let stream = try MediaProbe.videoStream(file)
                #expect(stream["width"] == "320" && stream["height"] == "240", "\(file): \(stream)")
            }
            #expect(tookS >= 0.95 && tookS < 5, "three pictures 500 ms apart took \(tookS) s")

            // Every setting: the answer, status's settings, and a control event naming it.
            let commands: [[String]] = [
                ["denoise", "high"], ["agc", "on"], ["voice-activity", "on"], ["bgm", "loop", "on"], ["log-level", "debug"],
                ["volume", "mic", "70"], ["mirror", "push", "on"], ["mirror", "preview", "on"],
            ]
            for words in commands {
                let reply = try broadcast.ctl(words)
                #expect(reply.result.exitCode == 0, "\(words): \(reply.result)")
            }
            let status = try #require(try broadcast.ctl(["status"]).answer?["result"] as? [String: Any])
            let settings = try #require(status["settings"] as? [String: Any])
            #expect(settings["denoise"] as? String == "high" && settings["agc"] as? Bool == true
                        && settings["voiceActivity"] as? Bool == true && settings["bgmLoop"] as? Bool == true
                        && settings["pushMirror"] as? Bool == true && settings["previewMirror"] as? Bool == true
                        && settings["previewOpen"] as? Bool == false, "\(settings)")
            #expect(status["logLevel"] as? String == "debug", "\(status["logLevel"] ?? "none")")
            #expect((status["volumePercent"] as? [String: Any])?["mic"] as? Int == 70, "\(status["volumePercent"] ?? "none")")
            // agc on kept the denoise level; denoise off keeps agc.
            #expect(try broadcast.ctl(["denoise", "off"]).result.exitCode == 0)
            let after = try self.settings(broadcast)
            #expect(after["denoise"] as? String == "off" && after["agc"] as? Bool == true, "\(after)")
            let named = broadcast.events.filter { $0["type"] as? String == "control" }.compactMap { event -> [String]? in
                guard let command = event["command"] as? String, let args = event["args"] as? [String] else { return nil }
                return [command] + args
            }
            for words in commands + [["snapshot", base, "--count", "3", "--interval", "500"], ["denoise", "off"]] {
                #expect(named.contains(words), "no control event for \(words): \(named)")
            }
            // Refused clearly, nothing changed: a wrong word (exit 2), ear monitoring to a sink that is not there.
            let wrong = try broadcast.ctl(["mirror", "sideways", "on"])
            #expect(wrong.result.exitCode == 2 && wrong.result.standardError.contains("use push|preview on|off"), "\(wrong.result)")
            let nowhere = try broadcast.ctl(["ear-monitor", "on", "no_such_sink"])
            #expect(nowhere.result.exitCode == 1 && nowhere.result.standardError.contains("no_such_sink"), "\(nowhere.result)")
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            let validation = try ProcessRunner.run("/usr/bin/python3", [Repository.path("Tests/Fixtures/validate_events.py"),
                                                                        Repository.path("docs/events.schema.json"),
                                                                        broadcast.eventsPath])
            #expect(validation.exitCode == 0, "\(validation)")
        }
    }
}
