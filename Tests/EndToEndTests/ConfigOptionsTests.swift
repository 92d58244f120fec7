import Foundation
import Testing
import TestSupport

/// The encoding options of `livepush screen` and `record`, and --config FILE, as a user types them.
@Suite(.timeLimit(.minutes(10))) struct ConfigOptionsTests {
    let livepush = BuiltProducts.path("livepush")

    private func configFile(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("config")).path + ".json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)  // it may hold stream keys: a config file that does must be private
        return path
    }

    @Test func notANumberNamesTheOption() throws {
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--fps", "abc"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.hasPrefix("livepush screen: invalid value 'abc' for '--fps'"))
    }

    @Test func outOfRangeValueSaysTheRange() throws {
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--gop", "11"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("--gop 11 s is outside 1...10 s"))
    }

    /// `--retry-for` takes a duration with its unit, or forever (issue 35); anything else is refused before the start.
    @Test func retryForTakesADurationOrForeverAndRefusesABareNumber() throws {
        func printed(_ value: String) throws -> String {
            let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--print-config", "--retry-for", value])
            #expect(result.exitCode == 0, "\(result)")
            return result.standardOutput
        }
        for (value, ms) in [("10m", 600_000), ("90s", 90000), ("2h", 7_200_000), ("forever", 0), ("1500ms", 1500)] {
            let text = try printed(value).replacingOccurrences(of: " ", with: "")
            #expect(text.contains("\"connectRetryForMs\":\(ms)"), "\(value): \(text)")
        }
        let bare = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--retry-for", "300"])
        #expect(bare.exitCode == 2, "\(bare)")
        #expect(bare.standardError.contains("invalid value '300' for '--retry-for'"), "\(bare)")
        #expect(bare.standardError.contains("such as 90s, 10m or 2h, or forever"), "\(bare)")
        let short = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--retry-for", "500ms"])
        #expect(short.exitCode == 2 && short.standardError.contains("--retry-for 500 ms is outside 1000...604800000 ms"),
                "\(short)")
    }

    @Test func unknownKeyInTheConfigFileIsNamed() throws {
        let path = try configFile(#"{"fps": 30, "framerate": 60}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--config", path])
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("unknown key 'framerate'"))
    }

    @Test func missingConfigFileIsNamed() throws {
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--config", "/tmp/no-such-livepush.json"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("/tmp/no-such-livepush.json"))
    }

    @Test func customQualityWithoutItsBitratesSaysWhichAreMissing() throws {
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--quality", "custom",
                                                      "--bitrate", "3000"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("custom quality needs --bitrate, --min-bitrate and --initial-bitrate"))
    }

    @Test func recordWithoutAGroupSaysSo() throws {
        let result = try ProcessRunner.run(livepush, ["record", "/tmp/never.mp4"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.hasPrefix("livepush record: missing argument <--group NAME>"))
    }

    @Test(.timeLimit(.minutes(10)))
    func printConfigShowsTheFileThenTheOptionsWithKeysRedacted() throws {
        let path = try configFile("""
            {"destinations": ["rtmp://127.0.0.1:1935/live/SECRET1", "rtmp://me:pw@b.example/app/inst/SECRET2"],
             "recordingPath": "/tmp/talk.mkv", "capture": {"region": "0,0,320,240", "cursor": false, "damage": true},
             "microphone": false, "desktopAudio": true, "pauseImagePath": "/tmp/pause.png", "fps": 25}
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try ProcessRunner.run(livepush, ["screen", "--config", path, "--print-config", "--fps", "20"])
        #expect(result.exitCode == 0, "\(result)")
        #expect(!result.standardOutput.contains("SECRET") && !result.standardOutput.contains("pw@"), "\(result)")
        let printed = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(printed["destinations"] as? [String] == ["rtmp://127.0.0.1:1935/live/****", "rtmp://****@b.example/app/****"])
        #expect(printed["recordingPath"] as? String == "/tmp/talk.mkv")
        #expect(printed["fps"] as? Int == 20, "the option overrides the file")
        #expect(printed["pauseImagePath"] as? String == "/tmp/pause.png")
        let capture = printed["capture"] as? [String: Any]
        #expect(capture?["region"] as? String == "0,0,320,240" && capture?["damage"] as? Bool == true
            && capture?["cursor"] as? Bool == false, "\(capture ?? [:])")
        #expect(printed["microphone"] as? Bool == false && printed["desktopAudio"] as? Bool == true)
        // The command line's URLs and FILE replace the file's.
        let again = try ProcessRunner.run(livepush, ["screen", "--config", path, "--print-config",
                                                     "rtmp://c.example/live/OTHER", "/tmp/other.mp4"])
        let override = try #require(try JSONSerialization.jsonObject(with: Data(again.standardOutput.utf8)) as? [String: Any])
        #expect(override["destinations"] as? [String] == ["rtmp://c.example/live/****"])
        #expect(override["recordingPath"] as? String == "/tmp/other.mp4")
    }

    /// A camera in the file: `capture`'s camera keys are the helper's options, and checked as the options are.
    @Test func theCameraKeysOfTheFileAreTheCameraOptions() throws {
        let path = try configFile("""
            {"capture": {"source": "camera", "camera": "v4l2_input.usb-cam", "size": "1280x720", "cameraFormat": "mjpeg",
                         "cameraPortal": true}}
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try ProcessRunner.run(livepush, ["screen", "--config", path, "--print-config"])
        #expect(result.exitCode == 0, "\(result)")
        let printed = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let capture = try #require(printed["capture"] as? [String: Any], "\(printed)")
        #expect(capture["source"] as? String == "camera" && capture["camera"] as? String == "v4l2_input.usb-cam"
            && capture["size"] as? String == "1280x720" && capture["cameraFormat"] as? String == "mjpeg"
            && capture["cameraPortal"] as? Bool == true, "\(capture)")
        let withoutSource = try configFile(#"{"capture": {"camera": "cam"}}"#)
        defer { try? FileManager.default.removeItem(atPath: withoutSource) }
        let refused = try ProcessRunner.run(livepush, ["screen", "--config", withoutSource, "--print-config"])
        #expect(refused.exitCode == 2)
        #expect(refused.standardError.contains("--camera needs --source camera"), "\(refused)")
    }

    @Test(arguments: [
        (#"{"capture": {"regoin": "0,0,10,10"}}"#,
         "unknown key 'capture.regoin' (did you mean 'capture.region'?) in 'capture'; its keys are: display,"),
        (#"{"capture": {"cursor": "no"}}"#, "key 'capture.cursor': expected true or false"),
        (#"{"destinations": "rtmp://a/live/k"}"#, "key 'destinations': expected an array of push URLs"),
        (#"{"microphone": 3}"#, "key 'microphone': expected a source's node name (see 'livepush devices'), true or false"),
        (#"{"desktopAudio": 1}"#, "key 'desktopAudio': expected true or false"),
        (#"{"destination": []}"#, "unknown key 'destination' (did you mean 'destinations'?); the keys are: resolution,"),
    ])
    func broadcastKeysAreCheckedAsStrictlyAsTheOthers(json: String, message: String) throws {
        let path = try configFile(json)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try ProcessRunner.run(livepush, ["screen", "--config", path, "--print-config"])
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.standardError.contains(message), "\(result.standardError)")
    }
}

extension SharedScreen {
    /// One `--config` file for a whole broadcast, as a user runs it: nginx gets the stream, the
    /// recording is written, the capture region and the audio choice are the file's.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct BroadcastFileTests {
        @Test(.timeLimit(.minutes(10)))
        func aConfigFileAloneDrivesTheWholeBroadcast() throws {
            let key = UniqueName.make("fromfile")
            let recording = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("file")).path + ".mkv"
            defer { try? FileManager.default.removeItem(atPath: recording) }
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("broadcast")).path + ".json"
            defer { try? FileManager.default.removeItem(atPath: path) }
            try """
                {"destinations": ["\(try TestEnvironment.recordURL(key: key))"], "recordingPath": "\(recording)",
                 "capture": {"display": "\(try TestEnvironment.display())", "region": "0,0,320,240"},
                 "microphone": false, "resolution": "320x240"}
                """.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o600)  // it holds a stream key
            let result = try ProcessRunner.run(BuiltProducts.path("livepush"), [
                "screen", "--config", path, "--duration", "3", "--quiet",
            ], timeoutSeconds: 30)
            #expect(result.exitCode == 0, "\(result)")
            #expect(!result.standardOutput.contains(key) && !result.standardError.contains(key))
            for file in [try TestEnvironment.closedRecording(key: key), recording] {
                let stream = try MediaProbe.videoStream(file)
                let frames = Int(stream["nb_read_frames"] ?? "") ?? 0
                #expect(stream["width"] == "320" && stream["height"] == "240" && (60...95).contains(frames), "\(file): \(stream)")
                let audio = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries",
                                                              "stream=codec_name", "-of", "csv=p=0", file])
                #expect(audio.standardOutput.isEmpty, "\(file): \"microphone\": false gives a video-only stream")
            }
        }
    }
}
