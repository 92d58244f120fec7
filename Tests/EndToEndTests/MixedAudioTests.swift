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
            Thread.sleep(forTimeInterval: 0.5)
            for file in [path, try TestEnvironment.recordedFile(key: key).path] {
                let samples = Array(try AudioAnalysis.decodeMono(file).dropFirst(96000))  // after 2 s
                let mic = AudioAnalysis.toneLevelDbfs(samples, frequencyHz: micHz, sampleRateHz: 48000)
                let desktop = AudioAnalysis.toneLevelDbfs(samples, frequencyHz: desktopHz, sampleRateHz: 48000)
                let between = AudioAnalysis.toneLevelDbfs(samples, frequencyHz: 700, sampleRateHz: 48000)
                // Each source plays its tone at about -18 dBFS.
                #expect(mic > -24 && desktop > -24 && between < -50,
                        "\(file): \(micHz) Hz \(mic) dBFS, \(desktopHz) Hz \(desktop) dBFS, 700 Hz \(between) dBFS")
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
