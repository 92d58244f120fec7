import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush screen` with the microphone and the helper's desktop audio: both tones of the
    /// test environment (the mic's and the desktop sink's) arrive mixed, in the recording and at
    /// nginx; `--no-mic` leaves the video alone.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the whole test environment (make test)"), .timeLimit(.minutes(10)))
    struct MixedAudioTests {
        let livepush = BuiltProducts.path("livepush")

        private func screen(_ extra: [String]) throws -> CommandResult {
            try ProcessRunner.run(livepush, ["screen", "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                                             "--resolution", "320x240", "--duration", "4", "--quiet"] + extra,
                                  timeoutSeconds: 40)
        }

        @Test func micAndDesktopAudioAreBothInTheRecordingAndAtTheServer() throws {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("mixed")).path + ".mkv"
            defer { try? FileManager.default.removeItem(atPath: path) }
            let key = UniqueName.make("mixed")
            let result = try screen([path, try TestEnvironment.recordURL(key: key), "--desktop-audio"])
            #expect(result.exitCode == 0, "\(result)")
            let micHz = try TestEnvironment.toneHz(), desktopHz = try TestEnvironment.desktopToneHz()
            for file in [path, try TestEnvironment.closedRecording(key: key)] {
                let samples = Array(try AudioAnalysis.decodeMono(file).dropFirst(96000))  // after 2 s
                #expect(samples.count >= 48000, "\(file): \(samples.count) samples after the first 2 s")
                // Each source plays its tone at about -18 dBFS. Levels per 100 ms and their median:
                // on a loaded machine a source's chunk can reach the mixer later than its 50 ms mix
                // delay, and the mixer leaves that 20 ms silent (the output never waits), so an
                // average over the whole file swings by several dB while the median does not.
                let mic = AudioAnalysis.toneLevelsDbfs(samples, frequencyHz: micHz, sampleRateHz: 48000)
                let desktop = AudioAnalysis.toneLevelsDbfs(samples, frequencyHz: desktopHz, sampleRateHz: 48000)
                let between = AudioAnalysis.toneLevelDbfs(samples, frequencyHz: 700, sampleRateHz: 48000)
                let levels = "\(file): \(micHz) Hz \(mic.windows.map { Int($0) }), \(desktopHz) Hz "
                    + "\(desktop.windows.map { Int($0) }), 700 Hz \(between) dBFS"
                #expect(try #require(mic.median) > -21 && (try #require(desktop.median)) > -21, "\(levels)")
                #expect(between < -50, "\(levels)")
            }
        }

        @Test func noMicGivesAVideoOnlyStream() throws {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("nomic")).path + ".mp4"
            defer { try? FileManager.default.removeItem(atPath: path) }
            let result = try screen([path, "--no-mic"])
            #expect(result.exitCode == 0, "\(result)")
            let streams = try ProcessRunner.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type",
                                                            "-of", "csv=p=0", path])
            #expect(streams.standardOutput.split(separator: "\n") == ["video"], "\(streams)")
        }
    }
}
