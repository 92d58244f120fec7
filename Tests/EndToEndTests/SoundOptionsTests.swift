import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush screen` with the sound options of issue 17, as a user runs them (docs/guide.md,
    /// "Sound"): background music at its volume in what nginx received, a missing music file
    /// and a missing ear-monitor sink as messages while the broadcast goes on, wrong values as
    /// usage errors.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the whole test environment (make test)"),
           .timeLimit(.minutes(10)))
    struct SoundOptionsTests {
        let livepush = BuiltProducts.path("livepush")

        private func screen(_ extra: [String], seconds: Int = 4) throws -> CommandResult {
            try ProcessRunner.run(livepush, ["screen", "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                                             "--resolution", "320x240", "--duration", String(seconds), "--quiet"] + extra,
                                  timeoutSeconds: 40)
        }

        @Test func bgmLoopsAtItsVolumeAtTheServer() throws {
            let music = try SoundSignals.toneFile(ext: "mp3", codec: "libmp3lame", frequencyHz: 600, amplitude: 0.5,
                                                  seconds: 1.5)
            defer { try? FileManager.default.removeItem(atPath: music) }
            let key = UniqueName.make("clibgm")
            let result = try screen([try TestEnvironment.recordURL(key: key), "--no-mic", "--bgm", music + ",loop",
                                     "--bgm-volume", "50"], seconds: 5)
            #expect(result.exitCode == 0, "\(result)")
            #expect(result.standardError.contains("background music: playing"), "\(result)")
            let received = try SoundSignals.receivedAudio(key: key, atLeastSeconds: 4)
            let level = AudioAnalysis.toneLevelDbfs(Array(received.dropFirst(48000 * 2).prefix(48000)), frequencyHz: 600,
                                                    sampleRateHz: 48000)
            // 0.5 peak is −9.03 dBFS; at 50 % −15.05; still there after two loops.
            #expect(abs(level + 15.05) < 1, "600 Hz at \(level) dBFS")
        }

        /// A missing ear-monitor sink is a message and the recording goes on; a missing music file is
        /// refused before anything starts (issue 35: every file named is checked before the start).
        @Test func aMissingSinkIsAMessageAndTheRecordingGoesOnAMissingMusicFileStopsTheStart() throws {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("clisnd")).path + ".mkv"
            defer { try? FileManager.default.removeItem(atPath: path) }
            let result = try screen([path, "--ear-monitor", "no-such-sink", "--denoise", "high", "--voice-activity"],
                                    seconds: 3)
            #expect(result.exitCode == 0, "\(result)")
            #expect(result.standardError.contains("no sink named 'no-such-sink'"), "\(result)")
            // The recording went on (the steady test tone itself is what --denoise takes for noise).
            let samples = try AudioAnalysis.decodeMono(path)
            #expect(samples.count > 48000 * 2, "\(samples.count) samples recorded")

            let refusedPath = path + ".refused.mkv"
            let refused = try screen([refusedPath, "--bgm", "/nonexistent/song.mp3"], seconds: 3)
            #expect(refused.exitCode == 2, "\(refused)")
            #expect(refused.standardError.contains("'/nonexistent/song.mp3' does not exist"), "\(refused)")
            #expect(!FileManager.default.fileExists(atPath: refusedPath), "a recording was started: \(refused)")
        }

        @Test func wrongSoundValuesAreUsageErrors() throws {
            for (option, value, words) in [("--denoise", "loud", "use off, low, medium or high"),
                                           ("--bgm-volume", "500", "use a percentage from 0 to 400"),
                                           ("--bgm", ",loop", "give a music file")] {
                let result = try ProcessRunner.run(livepush, ["screen", option, value], timeoutSeconds: 10)
                #expect(result.exitCode == 2 && result.standardError.contains(words), "\(option) \(value): \(result)")
            }
        }
    }
}
