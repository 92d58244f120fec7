import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush ctl` steering a real push to the test nginx-rtmp: each command is measured in what
    /// nginx recorded (bitrate from the FLV's packet sizes, mute and volume from the decoded audio,
    /// pause from the decoded pictures, add/remove/reconnect from the files nginx wrote).
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"), .timeLimit(.minutes(10)))
    struct ControlSocketTests {
        let livepush = BuiltProducts.path("livepush")

        private func answerOK(_ reply: (result: CommandResult, answer: [String: Any]?)) -> Bool {
            reply.result.exitCode == 0 && reply.answer?["ok"] as? Bool == true
        }

        @Test(.timeLimit(.minutes(10)))
        func bitrateMuteVolumePauseAddAndRemoveChangeWhatNginxReceives() throws {
            let key = UniqueName.make("ctlmain"), extraKey = UniqueName.make("ctlextra")
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "solid", "00ff00"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--quality", "custom", "--bitrate", "1500",
                "--min-bitrate", "200", "--initial-bitrate", "1500", "--pause-image", try ReceivedStream.redPicture(),
                "--mic", try TestEnvironment.microphone(), "--quiet", "--duration", "60",
            ])
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            Thread.sleep(forTimeInterval: 4)  // phase 1: 1500 kbps, the tone, the screen
            #expect(answerOK(try broadcast.ctl(["bitrate", "400"])))
            // A bad value and a refused one: clear errors, nothing changed.
            let bad = try broadcast.ctl(["bitrate", "lots"])
            #expect(bad.result.exitCode == 2 && bad.result.standardError.contains("invalid value 'lots'"), "\(bad.result)")
            let refused = try broadcast.ctl(["min-bitrate", "1000"])
            #expect(refused.result.exitCode == 1 && refused.answer?["ok"] as? Bool == false, "\(refused.result)")
            #expect(refused.result.standardError.contains("above the target bitrate (400 kbps)"), "\(refused.result)")
            Thread.sleep(forTimeInterval: 4)  // phase 2: 400 kbps
            #expect(answerOK(try broadcast.ctl(["mute", "mic"])))
            Thread.sleep(forTimeInterval: 3)  // phase 3: silence
            #expect(answerOK(try broadcast.ctl(["unmute", "mic"])))
            #expect(answerOK(try broadcast.ctl(["volume", "mic", "25"])))
            Thread.sleep(forTimeInterval: 3)  // phase 4: the tone 12 dB lower
            #expect(answerOK(try broadcast.ctl(["volume", "mic", "100"])))
            let paused = try broadcast.ctl(["pause"])
            #expect(answerOK(paused) && (paused.answer?["result"] as? [String: Any])?["paused"] as? Bool == true)
            Thread.sleep(forTimeInterval: 3)  // phase 5: the pause picture
            #expect(answerOK(try broadcast.ctl(["resume"])))
            #expect(answerOK(try broadcast.ctl(["add", try TestEnvironment.recordURL(key: extraKey)])))
            #expect(try broadcast.waitUntilPublishing(destinations: 2))
            Thread.sleep(forTimeInterval: 3)  // phase 6: two destinations
            let removed = try broadcast.ctl(["remove", "1"])
            #expect(answerOK(removed), "\(removed.result)")
            let wrongIndex = try broadcast.ctl(["remove", "5"])
            #expect(wrongIndex.result.exitCode == 1
                && wrongIndex.result.standardError.contains("destinations are numbered 0 to 0"), "\(wrongIndex.result)")
            Thread.sleep(forTimeInterval: 3)  // phase 7: one destination again, the screen
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "the broadcast ran to the end: \(result)")
            for text in [result.standardOutput, result.standardError] {
                #expect(!text.contains(key) && !text.contains(extraKey))
            }
            let main = try TestEnvironment.closedRecording(key: key)

            // Bitrate: what nginx received, second by second.
            let video = try ReceivedStream.packets(main, stream: "v:0")
            let before = ReceivedStream.kbps(video, from: 1, to: 4)
            let after = ReceivedStream.kbps(video, from: 5.5, to: 8)
            #expect(before > 1100 && before < 1900, "before 'bitrate 400': \(before) kbps")
            #expect(after > 250 && after < 550, "after 'bitrate 400': \(after) kbps")

            // Mute and volume: 100 ms levels of the decoded audio.
            let samples = try AudioAnalysis.decodeMono(main)
            let tone = try TestEnvironment.toneHz()
            let levels = stride(from: 0, to: samples.count - 4800, by: 4800).map {
                AudioAnalysis.toneLevelDbfs(Array(samples[$0..<$0 + 4800]), frequencyHz: tone, sampleRateHz: 48000)
            }
            try #require(levels.count >= 40, "\(levels.count) tenths of a second of audio")
            let loud = levels[10..<40].sorted()[15]
            #expect(loud > -40, "the tone before mute: \(loud) dBFS")
            let silentRun = ReceivedStream.longestRun(levels) { $0 < loud - 50 }
            #expect(silentRun.count >= 20, "at least 2 s of silence after 'mute mic': \(levels.map { Int($0) })")
            let quietStart = silentRun.end + 5
            let quiet = levels[quietStart..<min(levels.count, quietStart + 20)].sorted()[10]
            #expect(abs((loud - quiet) - 12) < 3, "'volume mic 25' lowers the tone 12 dB: \(loud) -> \(quiet) dBFS")

            // Pause: the pause picture (red) replaced the green screen, then the screen came back.
            let frames = try ReceivedStream.tinyFrames(main).map(ReceivedStream.redOrGreen)
            let redRun = ReceivedStream.longestRun(frames) { $0 == "red" }
            #expect(redRun.count >= 60, "about 3 s of the pause picture: \(redRun.count) frames")
            #expect(frames[..<redRun.start].filter { $0 == "green" }.count > 300, "the screen before the pause")
            #expect(frames[redRun.end...].filter { $0 == "green" }.count > 150, "the screen after resume")

            // Add and remove: the second destination got about the 3 s it was there.
            let extra = try MediaProbe.videoStream(try TestEnvironment.recordedFile(key: extraKey).path)
            let extraFrames = Int(extra["nb_read_frames"] ?? "") ?? 0
            #expect((45...150).contains(extraFrames), "the added destination received \(extraFrames) frames (~3 s)")
            let mainFrames = video.count
            #expect(mainFrames > extraFrames * 4, "the first destination kept the whole run: \(mainFrames)")

            // Every command is on the event timeline, keys redacted.
            let commands = broadcast.events.filter { $0["type"] as? String == "control" }.compactMap { $0["command"] as? String }
            #expect(commands == ["bitrate", "mute", "unmute", "volume", "volume", "pause", "resume", "add", "remove"])
            let eventText = try String(contentsOfFile: broadcast.eventsPath, encoding: .utf8)
            #expect(!eventText.contains(key) && !eventText.contains(extraKey))
        }

        @Test(.timeLimit(.minutes(10)))
        func reconnectStartsANewPublishAtNginx() throws {
            let key = UniqueName.make("ctlreconnect")
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic", "--quiet", "--duration", "60",
            ])
            #expect(try broadcast.waitUntilPublishing())
            Thread.sleep(forTimeInterval: 5)  // let it run: 5 s before (a file without the reconnect would hold them)
            #expect(answerOK(try broadcast.ctl(["reconnect"])))
            #expect(try broadcast.waitUntilPublishing())
            Thread.sleep(forTimeInterval: 2.5)  // let it run: the 2.5 s after, the span measured
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            // nginx records each publish from the start of its file: after the reconnection it
            // holds only the last ~2.5 s, not the whole ~7.5 s.
            let video = try ReceivedStream.packets(try TestEnvironment.closedRecording(key: key), stream: "v:0")
            let span = (video.last?.timeS ?? 0) - (video.first?.timeS ?? 0)
            #expect(span > 1.5 && span < 4.5, "nginx's file after 'reconnect' spans \(span) s")
            let statuses = broadcast.events.filter { $0["type"] as? String == "pushStatus" }.compactMap { $0["status"] as? String }
            #expect(statuses.filter { $0 == "connectSuccess" }.count == 2, "\(statuses)")
        }

        @Test(.timeLimit(.minutes(10)))
        func withoutANameCtlFindsTheOnlyBroadcastAndUnknownCommandsChangeNothing() throws {
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.liveURL(key: UniqueName.make("ctlname")), "--display",
                try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic",
                "--quiet", "--duration", "60",
            ])
            #expect(try broadcast.waitUntilPublishing())
            let list = try ProcessRunner.run(livepush, ["ctl"])
            #expect(list.exitCode == 0 && list.standardOutput.split(separator: "\n").contains { $0 == broadcast.name },
                    "\(list)")
            let noFile = try broadcast.ctl(["add", "--url-file", "/nonexistent/url"])
            #expect(noFile.result.exitCode == 2 && noFile.result.standardError.contains(
                "add --url-file: the URL file '/nonexistent/url' does not exist"), "\(noFile.result)")
            let unknown = try broadcast.ctl(["jump"])
            #expect(unknown.result.exitCode == 2 && unknown.result.standardError.contains("unknown command 'jump'"))
            #expect(unknown.answer?["ok"] as? Bool == false)
            // Raw JSON lines over the socket, as a script would send them: garbage gets an error line.
            let socket = try #require(try broadcast.ctl(["status"]).answer?["result"] as? [String: Any])
            #expect(socket["name"] as? String == broadcast.name && socket["pushing"] as? Bool == true)
            let raw = try ProcessRunner.run("python3", ["-c", """
                import socket, os, sys
                s = socket.socket(socket.AF_UNIX)
                s.connect(os.environ['XDG_RUNTIME_DIR'] + '/livepush/' + sys.argv[1] + '.control')
                s.sendall(b'not json\\n{"command":"volume","args":["mic",900]}\\n{"command":"status"}\\n')
                f = s.makefile()
                for _ in range(3): print(f.readline().strip())
                """, broadcast.name])
            let lines = raw.standardOutput.split(separator: "\n")
            #expect(lines.count == 3, "\(raw)")
            #expect(lines.first?.contains("\"code\":-1503") == true, "\(raw)")
            #expect(lines.dropFirst().first?.contains("\"code\":-1502") == true, "\(raw)")
            #expect(lines.last?.contains("\"ok\":true") == true, "\(raw)")
            let mode = try FileManager.default.attributesOfItem(atPath: try socketPath(broadcast.name))[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "the broadcast went on: \(result)")
            #expect(!FileManager.default.fileExists(atPath: try socketPath(broadcast.name)), "the socket is removed at the end")
        }

        @Test(.timeLimit(.minutes(10)))
        func withSeveralBroadcastsCtlListsThemAndAsksForAName() throws {
            // A private runtime directory: only these two broadcasts are in it.
            let runtime = privateRuntimeDirectory()
            let environment = ["XDG_RUNTIME_DIR": runtime]
            let arguments = ["push", try TestEnvironment.liveURL(key: UniqueName.make("several")), "--display",
                             try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240",
                             "--no-mic", "--quiet", "--duration", "60"]
            let first = try LiveBroadcast(livepush: livepush, arguments, environment: environment)
            let second = try LiveBroadcast(livepush: livepush, arguments.map { $0.contains("://") ? $0 + "b" : $0 },
                                           environment: environment)
            func ctl(_ words: [String]) throws -> CommandResult {
                try ProcessRunner.run(livepush, ["ctl"] + words, environment: environment)
            }
            var listed: [String] = []
            let deadline = Date().addingTimeInterval(15)
            while listed.count < 2 && Date() < deadline {
                listed = try ctl([]).standardOutput.split(separator: "\n").map(String.init)
                Thread.sleep(forTimeInterval: 0.2)
            }
            #expect(listed == [first.name, second.name].sorted(), "\(listed)")
            let ambiguous = try ctl(["status"])
            #expect(ambiguous.exitCode == 1, "\(ambiguous)")
            #expect(ambiguous.standardError.contains("several broadcasts are running: \(listed.joined(separator: ", ")); "
                + "name one: livepush ctl NAME COMMAND"), "\(ambiguous)")
            #expect(first.stop().exitCode == 0)
            let alone = try ctl(["status"])
            #expect(alone.exitCode == 0 && alone.standardOutput.contains("\"name\":\"\(second.name)\""), "\(alone)")
            #expect(second.stop().exitCode == 0)
            let none = try ctl(["status"])
            #expect(none.exitCode == 1 && none.standardError.contains("no broadcast is running"), "\(none)")
        }

        /// `ctl bgm`: music started over the socket is heard at nginx at its level, `bgm volume 50`
        /// lowers it 6 dB, `bgm stop` ends it, and a file that cannot be played is refused. (The
        /// broadcast has the mic, so it has audio to mix into; the music's 300 Hz is far from the
        /// mic's 1000 Hz.)
        @Test(.timeLimit(.minutes(10)))
        func musicStartedOverTheSocketIsHeardAtNginxAtItsVolume() throws {
            let key = UniqueName.make("ctlbgm")
            let music = try SoundSignals.toneFile(ext: "mp3", codec: "libmp3lame", frequencyHz: 300, amplitude: 0.5,
                                                  seconds: 1.5)
            defer { try? FileManager.default.removeItem(atPath: music) }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(), "--quiet",
                "--duration", "40",
            ])
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            Thread.sleep(forTimeInterval: 2)  // phase 1: no music
            let started = try broadcast.ctl(["bgm", "start", music, "loop"])
            #expect(answerOK(started), "\(started.result)")
            Thread.sleep(forTimeInterval: 4)  // phase 2: the music at 100 %, looping
            #expect(answerOK(try broadcast.ctl(["bgm", "volume", "50"])))
            Thread.sleep(forTimeInterval: 4)  // phase 3: 6 dB lower
            #expect(answerOK(try broadcast.ctl(["bgm", "stop"])))
            let missing = try broadcast.ctl(["bgm", "start", "/nonexistent/song.mp3"])
            #expect(missing.result.exitCode == 1 && missing.answer?["ok"] as? Bool == false, "\(missing.result)")
            #expect(missing.result.standardError.contains("'bgm' refused: '/nonexistent/song.mp3' does not exist"),
                    "\(missing.result)")
            Thread.sleep(forTimeInterval: 3)  // phase 4: no music again
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "the broadcast ran to the end: \(result)")
            let samples = try AudioAnalysis.decodeMono(try TestEnvironment.closedRecording(key: key))
            let levels = stride(from: 0, to: samples.count - 4800, by: 4800).map {
                AudioAnalysis.toneLevelDbfs(Array(samples[$0..<$0 + 4800]), frequencyHz: 300, sampleRateHz: 48000)
            }
            try #require(levels.count >= 100, "\(levels.count) tenths of a second of audio")
            // The music's level once it plays, then 6.02 dB lower after 'bgm volume 50'.
            let firstLoud = try #require(levels.firstIndex { $0 > -30 }, "no music arrived: \(levels.map { Int($0) })")
            try #require(levels.count >= firstLoud + 22, "\(levels.count) tenths of audio, music from \(firstLoud)")
            let fullLevel = levels[firstLoud + 2..<firstLoud + 22].sorted()[10]
            let full = ReceivedStream.longestRun(levels) { abs($0 - fullLevel) < 1.5 }
            let half = ReceivedStream.longestRun(levels) { abs($0 - (fullLevel - 6.02)) < 1.5 }
            #expect(fullLevel > -12, "the music at 100 %: \(fullLevel) dBFS")
            #expect(full.count >= 30, "about 4 s of music at \(fullLevel) dBFS: \(levels.map { Int($0) })")
            #expect(half.count >= 30 && half.start > full.start, "then about 4 s 6 dB lower: \(levels.map { Int($0) })")
            // (Less the tenth of a second holding each edge.)
            #expect(levels[..<max(0, full.start - 2)].allSatisfy { $0 < -45 }, "no music before 'bgm start'")
            let afterStop = levels[min(levels.count, half.end + 3)...]
            #expect(afterStop.count >= 10 && afterStop.allSatisfy { $0 < -45 },
                    "no music after 'bgm stop': \(levels.map { Int($0) })")
            let commands = broadcast.events.filter { $0["type"] as? String == "control" }.compactMap { $0["command"] as? String }
            #expect(commands == ["bgm", "bgm", "bgm"], "\(commands)")
            #expect(broadcast.events.contains { $0["type"] as? String == "bgmStarted" })
        }

        private func socketPath(_ name: String) throws -> String {
            try TestEnvironment.value("XDG_RUNTIME_DIR", of: .pipewire) + "/livepush/\(name).control"
        }
    }
}
