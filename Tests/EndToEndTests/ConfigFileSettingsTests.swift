import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// The sound, preview and log options as `--config` keys (issue 35: every control from the file), as a
    /// user writes them: `--print-config` shows them and reads back to the same print, the command line wins,
    /// a wrong value names its key and stops the start, and a file's `micVolume` is what the recording hears.
    @Suite(.timeLimit(.minutes(10))) struct ConfigFileSettingsTests {
        let livepush = BuiltProducts.path("livepush")

        /// Every key of the sound, preview and log options, none at its default.
        static let everyKey = """
            {"micVolume": 30, "desktopVolume": 250, "bgm": "/tmp/livepush-song.mp3,loop", "bgmVolume": 40,
             "denoise": "medium", "agc": true, "voiceActivity": true, "earMonitor": "default", "preview": true,
             "previewMode": "crop", "previewMirror": true, "previewGeometry": "640x360+10+20", "logLevel": "warning",
             "replayBuffer": 12, "replayDir": "/tmp"}
            """

        private func configFile(_ json: String) throws -> String {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("settings")).path
                + ".json"
            try json.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o600)
            return path
        }

        private func printConfig(_ arguments: [String]) throws -> (text: String, object: [String: Any]) {
            let result = try ProcessRunner.run(livepush, ["screen", "--print-config"] + arguments)
            #expect(result.exitCode == 0, "\(result)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8))
                as? [String: Any], "\(result)")
            return (result.standardOutput, object)
        }

        @Test func printConfigShowsEveryKeyAndItsPrintReadsBackToTheSamePrint() throws {
            let path = try configFile(Self.everyKey)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let first = try printConfig(["/tmp/never.mkv", "--config", path])
            let printed = first.object
            #expect(printed["micVolume"] as? Int == 30 && printed["desktopVolume"] as? Int == 250
                && printed["bgmVolume"] as? Int == 40, "\(printed)")
            #expect(printed["bgm"] as? String == "/tmp/livepush-song.mp3,loop" && printed["denoise"] as? String == "medium"
                && printed["earMonitor"] as? String == "default", "\(printed)")
            #expect(printed["agc"] as? Bool == true && printed["voiceActivity"] as? Bool == true, "\(printed)")
            #expect(printed["preview"] as? Bool == true && printed["previewMirror"] as? Bool == true
                && printed["previewMode"] as? String == "crop" && printed["previewGeometry"] as? String == "640x360+10+20",
                "\(printed)")
            #expect(printed["logLevel"] as? String == "warning", "\(printed)")
            #expect(printed["replayBuffer"] as? Int == 12 && printed["replayDir"] as? String == "/tmp", "\(printed)")

            let saved = try configFile(first.text)
            defer { try? FileManager.default.removeItem(atPath: saved) }
            let again = try printConfig(["--config", saved])
            #expect(again.text == first.text)
        }

        @Test func printConfigShowsTheDefaultsAndTheyReadBackToTheSamePrint() throws {
            let first = try printConfig(["/tmp/never.mkv"])
            let printed = first.object
            #expect(printed["micVolume"] as? Int == 100 && printed["desktopVolume"] as? Int == 100
                && printed["bgmVolume"] as? Int == 100 && printed["denoise"] as? String == "off"
                && printed["agc"] as? Bool == false && printed["voiceActivity"] as? Bool == false
                && printed["preview"] as? Bool == false && printed["logLevel"] as? String == "info", "\(printed)")
            // Not given, no default: left out (the preview's own keys too, which need the preview).
            for key in ["bgm", "earMonitor", "previewMode", "previewMirror", "previewGeometry"] {
                #expect(printed[key] == nil, "\(key) in \(printed)")
            }
            let saved = try configFile(first.text)
            defer { try? FileManager.default.removeItem(atPath: saved) }
            #expect(try printConfig(["--config", saved]).text == first.text)
        }

        @Test func theCommandLineWinsOverTheFile() throws {
            let path = try configFile(Self.everyKey)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let printed = try printConfig(["/tmp/never.mkv", "--config", path, "--mic-volume", "70", "--denoise", "low",
                                           "--preview-mode", "fit"]).object
            #expect(printed["micVolume"] as? Int == 70 && printed["denoise"] as? String == "low"
                && printed["previewMode"] as? String == "fit", "\(printed)")
            #expect(printed["desktopVolume"] as? Int == 250 && printed["logLevel"] as? String == "warning",
                    "the keys the command line leaves alone stay the file's: \(printed)")
        }

        @Test(arguments: [
            (#"{"agc": "yes"}"#, "key 'agc': expected true or false (--agc)"),
            (#"{"micVolume": "loud"}"#, "key 'micVolume': expected a whole number (--mic-volume PERCENT)"),
            (#"{"desktopVolume": 2.5}"#, "key 'desktopVolume': expected a whole number (--desktop-volume PERCENT)"),
            (#"{"previewMode": 3}"#, "key 'previewMode': expected a string (--preview-mode fit|fill|crop)"),
            (#"{"micVolume": 500}"#, "key 'micVolume' (--mic-volume 500): use a percentage from 0 to 400"),
            (#"{"desktopVolume": -1}"#, "key 'desktopVolume' (--desktop-volume -1): use a percentage from 0 to 400"),
            (#"{"bgmVolume": 401}"#, "key 'bgmVolume' (--bgm-volume 401): use a percentage from 0 to 400"),
            (#"{"denoise": "loud"}"#, "key 'denoise' (--denoise loud): use off, low, medium or high"),
            (#"{"logLevel": "verbose"}"#, "key 'logLevel' (--log-level verbose): use quiet, error, warning, info or debug"),
            (#"{"previewMode": "fill"}"#, "key 'previewMode' (--preview-mode fill): it needs --preview as well"),
            (#"{"previewGeometry": "big", "preview": true}"#, "key 'previewGeometry' (--preview-geometry big): use WIDTHxHEIGHT"),
            (#"{"replayBuffer": 0}"#, "key 'replayBuffer' (--replay-buffer 0): give whole seconds, 1 to 600"),
            (#"{"micVolum": 50}"#, "unknown key 'micVolum' (did you mean 'micVolume'?); the keys are: resolution,"),
        ])
        func aWrongValueInTheFileNamesItsKey(json: String, message: String) throws {
            let path = try configFile(json)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mkv", "--config", path, "--print-config"])
            #expect(result.exitCode == 2, "\(result)")
            #expect(result.standardError.hasPrefix("livepush screen: invalid value '\(path)' for '--config': "),
                    "\(result.standardError)")
            #expect(result.standardError.contains(message), "\(result.standardError)")
        }

        @Test(arguments: [("--mic-volume", "401"), ("--mic-volume", "loud"), ("--desktop-volume", "-5")])
        func aVolumeOutOfRangeOnTheCommandLineSaysTheRange(option: String, value: String) throws {
            let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mkv", option, value])
            #expect(result.exitCode == 2, "\(result)")
            #expect(result.standardError.contains("invalid value '\(value)' for '\(option)': use a percentage from 0 to 400"),
                    "\(result)")
        }

        /// The file's music is checked before the start, as `--bgm`'s is: nothing is recorded.
        @Test func aMissingMusicFileInTheFileIsRefusedBeforeTheStart() throws {
            let path = try configFile(#"{"bgm": "/nonexistent/song.mp3", "micVolume": 50}"#)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let recording = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("nobgm")).path
                + ".mkv"
            defer { try? FileManager.default.removeItem(atPath: recording) }
            let result = try ProcessRunner.run(livepush, ["screen", recording, "--config", path, "--duration", "3"])
            #expect(result.exitCode == 2, "\(result)")
            #expect(result.standardError.contains("key 'bgm' (--bgm /nonexistent/song.mp3): the background music file "
                + "'/nonexistent/song.mp3' does not exist"), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: recording), "a recording was started: \(result)")
        }

        /// A real run on the test mic's steady tone: the file's `micVolume` 0 records silence, 100 the tone; the
        /// file's `desktopVolume` 0 leaves the desktop's tone out while the mic's stays.
        @Test(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.pipewire),
                       "needs the test Xvfb and PipeWire (make test)"))
        func theFilesMicAndDesktopVolumesAreWhatTheRecordingHears() throws {
            let micHz = try TestEnvironment.toneHz(), desktopHz = try TestEnvironment.desktopToneHz()
            func recorded(_ json: String) throws -> [Float] {
                let path = try configFile(json)
                defer { try? FileManager.default.removeItem(atPath: path) }
                let recording = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("vol")).path
                    + ".mkv"
                defer { try? FileManager.default.removeItem(atPath: recording) }
                let result = try ProcessRunner.run(livepush, [
                    "screen", recording, "--config", path, "--display", try TestEnvironment.display(),
                    "--region", "0,0,320,240", "--resolution", "320x240", "--duration", "3", "--quiet",
                ], timeoutSeconds: 40)
                #expect(result.exitCode == 0, "\(result)")
                let samples = try AudioAnalysis.decodeMono(recording)
                #expect(samples.count >= 72000, "\(json): \(samples.count) samples recorded")
                return samples
            }
            // Silent from the first sample: the volume is set before the microphone starts.
            let silent = try recorded(#"{"micVolume": 0}"#)
            #expect(AudioAnalysis.rmsDbfs(silent) < -70, "micVolume 0: \(AudioAnalysis.rmsDbfs(silent)) dBFS")

            let heard = Array(try recorded(#"{"micVolume": 100, "desktopAudio": true, "desktopVolume": 0}"#)
                .dropFirst(24000))  // after the first 0.5 s
            // The test mic's tone is at about -18 dBFS.
            let mic = try #require(AudioAnalysis.toneLevelsDbfs(heard, frequencyHz: micHz, sampleRateHz: 48000).median)
            let desktop = AudioAnalysis.toneLevelDbfs(heard, frequencyHz: desktopHz, sampleRateHz: 48000)
            #expect(mic > -24, "micVolume 100: the mic's \(micHz) Hz at \(mic) dBFS")
            #expect(desktop < -60, "desktopVolume 0: the desktop's \(desktopHz) Hz at \(desktop) dBFS")
        }
    }
}
