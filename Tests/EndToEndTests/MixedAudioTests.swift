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
            let events = path + ".events"
            defer { try? FileManager.default.removeItem(atPath: events) }
            let result = try screen([path, try TestEnvironment.recordURL(key: key), "--desktop-audio", "--events", events])
            #expect(result.exitCode == 0, "\(result)")
            let micHz = try TestEnvironment.toneHz(), desktopHz = try TestEnvironment.desktopToneHz()
            for file in [path, try TestEnvironment.closedRecording(key: key)] {
                let samples = Array(try AudioAnalysis.decodeMono(file).dropFirst(96000))  // after 2 s
                #expect(samples.count >= 48000, "\(file): \(samples.count) samples after the first 2 s")
                // Each source plays its tone at about -18 dBFS. Levels per 100 ms, each one: a chunk
                // late for the mix is waited for (up to 250 ms); one later still leaves a hole, and
                // is counted (`audioGapMs`). A window 3 dB down has about 30 ms of its 100 silent:
                // every such window must be paid for by 25 ms of holes counted.
                let mic = AudioAnalysis.toneLevelsDbfs(samples, frequencyHz: micHz, sampleRateHz: 48000)
                let desktop = AudioAnalysis.toneLevelsDbfs(samples, frequencyHz: desktopHz, sampleRateHz: 48000)
                let between = AudioAnalysis.toneLevelDbfs(samples, frequencyHz: 700, sampleRateHz: 48000)
                let levels = "\(file): \(micHz) Hz \(mic.windows.map { Int($0) }), \(desktopHz) Hz "
                    + "\(desktop.windows.map { Int($0) }), 700 Hz \(between) dBFS"
                let low = (mic.windows + desktop.windows).filter { $0 <= -21 }.count
                let gapMs = try lastStatistic("audioGapMs", events)
                #expect(!mic.windows.isEmpty && !desktop.windows.isEmpty && low * 25 <= gapMs,
                        "\(low) windows 3 dB down, \(gapMs) ms of holes counted: \(levels)")
                #expect(between < -50, "\(levels)")
            }
        }

        /// The last statistics event's `field` in the events file at `path`.
        private func lastStatistic(_ field: String, _ path: String) throws -> Int {
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            let last = lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
                .last { $0["type"] as? String == "statistics" }
            return try #require(last?[field] as? Int, "no \(field) in the statistics of \(path)")
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
