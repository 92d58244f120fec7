import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// Issue 35 item 1, private on lock: the X screen saver turned on and off with `xset s activate` /
    /// `xset s reset` on the test Xvfb (the signal a locker gives), and what nginx received decoded: the
    /// pause picture (red) while it is on, never what the screen shows then, the screen (green) before and
    /// after. `--on-lock ignore` sends the screen as it is.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct ScreenLockTests {
        let livepush = BuiltProducts.path("livepush")

        private func xset(_ words: [String]) throws {
            let result = try ProcessRunner.run("xset", ["-display", try TestEnvironment.display()] + words)
            #expect(result.exitCode == 0, "xset \(words): \(result)")
        }

        /// Pushes the green screen to nginx, turns the X screen saver on for 3 s, then off; returns the
        /// colour of every picture nginx received and the run's stderr.
        private func pushThroughALock(onLock: String, extra: [String] = ["--no-mic"]) throws
            -> (frames: [String], standardError: String, received: String)
        {
            let key = UniqueName.make("lock-\(onLock)")
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "solid", "00ff00"])
            defer { painter.closeInput(); _ = painter.finish() }
            try xset(["s", "reset"])
            defer { _ = try? ProcessRunner.run("xset", ["-display", (try? TestEnvironment.display()) ?? ":0", "s", "reset"]) }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--pause-image", try ReceivedStream.redPicture(),
                "--on-lock", onLock, "--quiet", "--duration", "60",
            ] + extra)
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            Thread.sleep(forTimeInterval: 3)  // phase 1: the screen
            try xset(["s", "activate"])
            if onLock != "ignore" {
                #expect(try waitUntil(timeoutSeconds: 5) { broadcast.command.errorSoFar.contains("the screen is locked") },
                        "the helper never saw the lock: \(broadcast.command.errorSoFar)")
            }
            Thread.sleep(forTimeInterval: 3)  // phase 2: locked
            try xset(["s", "reset"])
            if onLock != "ignore" {
                #expect(try waitUntil(timeoutSeconds: 5) { broadcast.command.errorSoFar.contains("the screen is unlocked") },
                        "the helper never saw the unlock: \(broadcast.command.errorSoFar)")
            }
            Thread.sleep(forTimeInterval: 3)  // phase 3: the screen again
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            let received = try TestEnvironment.closedRecording(key: key)
            let frames = try ReceivedStream.tinyFrames(received).map(ReceivedStream.redOrGreen)
            return (frames, result.standardError, received)
        }

        @Test(.timeLimit(.minutes(10)))
        func aLockedScreenShowsThePausePictureAtNginxAndTheScreenAfterTheUnlock() throws {
            let (frames, standardError, _) = try pushThroughALock(onLock: "pause")
            let red = ReceivedStream.longestRun(frames) { $0 == "red" }
            #expect(red.count >= 60, "about 3 s of the pause picture while locked: \(red.count) frames; \(summary(frames))")
            #expect(frames[..<red.start].filter { $0 == "green" }.count >= 60, "the screen before the lock: \(summary(frames))")
            #expect(frames[red.end...].filter { $0 == "green" }.count >= 60, "the screen after the unlock: \(summary(frames))")
            // From the first picture of the screen on, nothing but the screen and the pause picture.
            // Before it, at most half a second of the stream's opening pictures (black until the
            // capture's first frame: 5 of them in a loaded CI run).
            let firstGreen = try #require(frames.firstIndex(of: "green"), "\(summary(frames))")
            #expect(firstGreen < 15 && frames[firstGreen...].allSatisfy { $0 != "other" },
                    "only green and red: \(summary(frames))")
            #expect(standardError.contains("the capture helper paused: the screen is locked"), "\(standardError)")
            #expect(standardError.contains("the capture helper resumed"), "\(standardError)")
        }

        @Test(.timeLimit(.minutes(10)))
        func onLockIgnoreSendsTheScreenWhileLocked() throws {
            // Xvfb's screen saver draws nothing over the screen: what a locker would draw goes out as it is.
            let (frames, standardError, _) = try pushThroughALock(onLock: "ignore")
            #expect(!frames.contains("red"), "no pause picture with --on-lock ignore: \(summary(frames))")
            #expect(ReceivedStream.longestRun(frames) { $0 == "green" }.count >= 240, "the screen throughout: \(summary(frames))")
            #expect(!standardError.contains("the screen is locked"), "\(standardError)")
        }

        /// The desktop tone's level (median of 100 ms, dBFS) at nginx before, during and after the lock,
        /// pushed with --desktop-audio (the test sink's 440 Hz) and no mic.
        private func desktopToneThroughALock(onLock: String) throws -> (before: Double, during: Double, after: Double) {
            let (frames, standardError, received) = try pushThroughALock(onLock: onLock,
                                                                         extra: ["--no-mic", "--desktop-audio"])
            #expect(standardError.contains("the desktop's sound withheld") == (onLock == "mute"), "\(standardError)")
            let red = ReceivedStream.longestRun(frames) { $0 == "red" }
            #expect(red.count >= 60, "the pause picture while locked: \(summary(frames))")
            let samples = try AudioAnalysis.decodeMono(received)
            let hz = try TestEnvironment.desktopToneHz()
            // 100 ms levels; the pictures are 30 a second, so picture i is at i / 30 s.
            let levels = stride(from: 0, to: samples.count - 4800, by: 4800).map {
                AudioAnalysis.toneLevelDbfs(Array(samples[$0..<$0 + 4800]), frequencyHz: hz, sampleRateHz: 48000)
            }
            let lockStart = red.start * 10 / 30, lockEnd = red.end * 10 / 30
            try #require(lockStart >= 15 && lockEnd + 15 <= levels.count, "\(levels.count) levels, lock \(lockStart)-\(lockEnd)")
            let before = levels[5..<lockStart - 5].sorted()[(lockStart - 10) / 2]
            let during = levels[(lockStart + 5)..<(lockEnd - 5)].sorted()[(lockEnd - lockStart - 10) / 2]
            let after = levels[(lockEnd + 5)..<(lockEnd + 15)].sorted()[5]
            #expect(before > -40 && after > -40, "the tone before (\(before) dBFS) and after (\(after) dBFS)")
            return (before, during, after)
        }

        /// `--on-lock mute`: while locked the desktop's sound is withheld too: gone at nginx.
        @Test(.timeLimit(.minutes(10)))
        func onLockMuteWithholdsTheDesktopSoundWhileLocked() throws {
            let tone = try desktopToneThroughALock(onLock: "mute")
            #expect(tone.during < tone.before - 40, "no tone while locked: \(tone)")
        }

        /// `--on-lock pause` (the default): the picture pauses, the desktop's sound goes on (SPEC: AUDIO in PAUSED).
        @Test(.timeLimit(.minutes(10)))
        func onLockPauseKeepsTheDesktopSound() throws {
            let tone = try desktopToneThroughALock(onLock: "pause")
            #expect(abs(tone.during - tone.before) < 6, "the tone goes on while locked: \(tone)")
        }

        /// "green x90, red x95, green x91": the runs of colours in order.
        private func summary(_ frames: [String]) -> String {
            var runs: [(String, Int)] = []
            for frame in frames {
                if let last = runs.last, last.0 == frame { runs[runs.count - 1].1 += 1 } else { runs.append((frame, 1)) }
            }
            return runs.map { "\($0.0) x\($0.1)" }.joined(separator: ", ")
        }

    }
}
