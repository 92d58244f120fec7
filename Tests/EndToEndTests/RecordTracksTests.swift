import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// Issue 34, item 3: a track per source. The test environment plays a tone into the mic and
    /// another as the desktop's sound; the music is a third. With `--record-tracks` the file holds
    /// the mix (the default track) and a named track per source, each with its own tone and none of
    /// the others', in step with the mix. Under a CPU hog, in MKV and MP4; FLV is refused before
    /// the start, and `ctl record start` mid-broadcast gets the tracks too.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.pipewire)
                        && TestEnvironment.isEnabled(.rtmp), "needs the test Xvfb, PipeWire and nginx-rtmp (make test)"),
           .timeLimit(.minutes(10)))
    struct RecordTracksTests {
        let livepush = BuiltProducts.path("livepush")
        static let musicHz = 600.0

        private func temporary(_ name: String, _ ext: String) -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(name)).path + "." + ext
        }

        /// Each audio stream's title and default flag, in order.
        private func audioStreams(_ path: String) throws -> [(title: String, isDefault: Bool)] {
            let probe = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries",
                                                          "stream_tags=title,handler_name:stream_disposition=default", "-of", "json", path])
            #expect(probe.exitCode == 0, "\(probe)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(probe.standardOutput.utf8)) as? [String: Any])
            let streams = try #require(object["streams"] as? [[String: Any]], "\(object)")
            return streams.map {
                // MKV names a track by its title, MP4 by its handler's name.
                let tags = $0["tags"] as? [String: String] ?? [:]
                return (tags["title"] ?? tags["handler_name"] ?? "", (($0["disposition"] as? [String: Int])?["default"] ?? 0) == 1)
            }
        }

        /// The tones' levels (dBFS) in track `track`, after its first second.
        private func levels(_ path: String, track: Int) throws -> (mic: Double, desktop: Double, music: Double, samples: Int) {
            let samples = Array(try AudioAnalysis.decodeMono(path, track: track).dropFirst(48000))
            func level(_ hz: Double) -> Double { AudioAnalysis.toneLevelDbfs(samples, frequencyHz: hz, sampleRateHz: 48000) }
            return (level(try TestEnvironment.toneHz()), level(try TestEnvironment.desktopToneHz()), level(Self.musicHz),
                    samples.count)
        }

        /// The file's tracks: the mix has all three tones; each source track its own, the others
        /// at least 40 dB under it; every track as long as the mix.
        private func checkTracks(_ path: String, label: String) throws {
            let streams = try audioStreams(path)
            #expect(streams.map(\.title) == ["Mix", "Microphone", "Desktop audio", "Music"], "\(label): \(streams)")
            #expect(streams.map(\.isDefault) == [true, false, false, false], "\(label): players use the mix: \(streams)")
            let mix = try levels(path, track: 0), mic = try levels(path, track: 1)
            let desktop = try levels(path, track: 2), music = try levels(path, track: 3)
            print("tracks \(label): mix \(mix), mic \(mic), desktop \(desktop), music \(music)")
            #expect(mix.mic > -40 && mix.desktop > -40 && mix.music > -40, "\(label): the mix has every source: \(mix)")
            #expect(mic.mic > -40 && mic.desktop < mic.mic - 40 && mic.music < mic.mic - 40, "\(label): mic track \(mic)")
            #expect(desktop.desktop > -40 && desktop.mic < desktop.desktop - 40 && desktop.music < desktop.desktop - 40,
                    "\(label): desktop track \(desktop)")
            #expect(music.music > -40 && music.mic < music.music - 40 && music.desktop < music.music - 40,
                    "\(label): music track \(music)")
            // In step: the same number of samples in every track (one AAC frame of slack).
            for track in [mic, desktop, music] {
                #expect(abs(track.samples - mix.samples) <= 1024, "\(label): \(track.samples) samples beside the mix's \(mix.samples)")
            }
            #expect(try MediaProbe.decodeErrors(path) == "", "\(label) does not decode cleanly")
        }

        private func music() throws -> String {
            try SoundSignals.toneFile(ext: "wav", codec: "pcm_s16le", frequencyHz: Int(Self.musicHz), amplitude: 0.3, seconds: 2)
        }

        @Test(arguments: ["mkv", "mp4"])
        func eachSourceHasItsOwnNamedTrackBesideTheMix(_ container: String) throws {
            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            let music = try music()
            let output = temporary("tracks", container)
            defer { [music, output].forEach { try? FileManager.default.removeItem(atPath: $0) } }
            let result = try ProcessRunner.run(livepush, [
                "screen", output, "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                "--resolution", "320x240", "--mic", try TestEnvironment.microphone(), "--desktop-audio",
                "--bgm", music + ",loop", "--record-tracks", "--duration", "5", "--quiet",
            ], timeoutSeconds: 60)
            #expect(result.exitCode == 0, "\(result)")
            try checkTracks(output, label: container)
        }

        @Test func aRecordingStartedFromCtlGetsTheTracksAndFLVIsRefusedBeforeTheStart() throws {
            let refused = try ProcessRunner.run(livepush, [
                "screen", temporary("tracks", "flv"), "--display", try TestEnvironment.display(), "--record-tracks",
                "--duration", "2",
            ], timeoutSeconds: 20)
            #expect(refused.exitCode == 2 && refused.standardError.contains("FLV holds one audio track"), "\(refused)")

            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            let music = try music()
            let output = temporary("ctltracks", "mkv")
            defer { [music, output].forEach { try? FileManager.default.removeItem(atPath: $0) } }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: UniqueName.make("tracks")), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--mic", try TestEnvironment.microphone(),
                "--desktop-audio", "--bgm", music + ",loop", "--record-tracks", "--quiet", "--duration", "60",
            ])
            #expect(try broadcast.waitUntilPublishing(timeoutSeconds: 20), "\(broadcast.command.errorSoFar)")
            let started = try broadcast.ctl(["record", "start", output])
            #expect(started.result.exitCode == 0, "\(started.result)")
            Thread.sleep(forTimeInterval: 4)  // 4 s recorded: part of the stimulus
            #expect(try broadcast.ctl(["record", "stop"]).result.exitCode == 0)
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            try checkTracks(output, label: "ctl record start")
        }
    }
}
