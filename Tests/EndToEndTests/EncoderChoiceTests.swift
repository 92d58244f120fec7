import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// --preset, --profile, --tune and --threads as nginx received them (ffprobe's profile, and the
    /// options x264 wrote into the stream), and --record-quality: a recording of its own quality
    /// beside an unchanged live stream.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct EncoderChoiceTests {
        let livepush = BuiltProducts.path("livepush")

        /// x264's motion estimation depth and reference count for each preset (x264's preset table).
        static let presetMarks: [String: (subme: String, ref: String)] = [
            "ultrafast": ("0", "1"), "superfast": ("1", "1"), "veryfast": ("2", "1"),
            "faster": ("4", "2"), "fast": ("6", "2"), "medium": ("7", "3"),
        ]

        private func push(_ key: String, _ options: [String], seconds: Int = 3) throws -> CommandResult {
            try ProcessRunner.run(livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "400,100,320,240", "--resolution", "320x240", "--duration", String(seconds), "--quiet",
            ] + options, timeoutSeconds: 40)
        }

        private func profile(_ path: String) throws -> String {
            let result = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                           "stream=profile", "-of", "csv=p=0", path])
            #expect(result.exitCode == 0, "\(result)")
            return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        @Test(arguments: [("baseline", "ultrafast", "Constrained Baseline"), ("main", "faster", "Main"),
                          ("high", "medium", "High")])
        func profilePresetAndThreadsReachTheReceiver(profile wanted: String, preset: String, ffprobeName: String)
            throws
        {
            let key = UniqueName.make("profile")
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+400+100", "square", "102030", "f0c040",
                                                     "60", "4"])
            defer { painter.closeInput(); _ = painter.finish() }
            let result = try push(key, ["--profile", wanted, "--preset", preset, "--threads", "2"])
            #expect(result.exitCode == 0, "\(result)")
            let path = try TestEnvironment.closedRecording(key: key)
            #expect(try profile(path) == ffprobeName)
            let options = try X264Options.read(path)
            let marks = try #require(Self.presetMarks[preset])
            #expect(options["subme"] == marks.subme && options["ref"] == marks.ref, "\(options)")
            #expect(options["threads"] == "2", "\(options)")
            #expect(options["cabac"] == (wanted == "baseline" ? "0" : "1"), "\(options)")
            #expect(options["8x8dct"] == (wanted == "high" ? "1" : "0"), "\(options)")
            // zerolatency, the default tune: sliced threads, no lookahead, no B-frames; CBR.
            #expect(options["sliced_threads"] == "1" && options["rc_lookahead"] == "0" && options["bframes"] == "0",
                    "\(options)")
            #expect(options["rc"] == "cbr", "\(options)")
        }

        @Test func defaultsAreVeryfastZerolatencyHighAndAnotherTuneReplacesZerolatency() throws {
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+400+100", "square", "102030", "f0c040",
                                                     "60", "4"])
            defer { painter.closeInput(); _ = painter.finish() }
            let plain = UniqueName.make("tunedefault"), film = UniqueName.make("tunefilm")
            #expect(try push(plain, []).exitCode == 0)
            #expect(try push(film, ["--tune", "film"]).exitCode == 0)
            let plainPath = try TestEnvironment.closedRecording(key: plain)
            let defaults = try X264Options.read(plainPath)
            #expect(try profile(plainPath) == "High")
            #expect(defaults["subme"] == "2" && defaults["sliced_threads"] == "1" && defaults["deblock"] == "1:0:0",
                    "\(defaults)")
            let filmOptions = try X264Options.read(try TestEnvironment.closedRecording(key: film))
            // film: deblocking -1:-1; without zerolatency, x264's lookahead and frame threads are back.
            #expect(filmOptions["deblock"] == "1:-1:-1" && filmOptions["sliced_threads"] == "0", "\(filmOptions)")
            #expect(filmOptions["rc_lookahead"] != "0", "\(filmOptions)")
        }

        @Test func recordingOfItsOwnQualityIsCRFWhileTheLiveStreamStaysCBR() throws {
            let key = UniqueName.make("recquality")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("rec")).path
                + ".mkv"
            defer { try? FileManager.default.removeItem(atPath: file) }
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+400+100", "square", "102030", "f0c040",
                                                     "60", "4"])
            defer { painter.closeInput(); _ = painter.finish() }
            let result = try push(key, ["--record", file, "--record-quality", "crf=30,preset=ultrafast",
                                        "--bitrate", "1500", "--min-bitrate", "1500", "--initial-bitrate", "1500",
                                        "--no-auto-bitrate"], seconds: 4)
            #expect(result.exitCode == 0, "\(result)")
            let live = try TestEnvironment.closedRecording(key: key)
            // Both decode without a single error.
            for path in [live, file] {
                let decode = try ProcessRunner.run(
                    "ffmpeg", ["-nostdin", "-v", "error", "-i", path] + MediaProbe.nullOutput)
                #expect(decode.exitCode == 0 && decode.standardError.isEmpty, "\(path): \(decode)")
            }
            let liveOptions = try X264Options.read(live), recordOptions = try X264Options.read(file)
            #expect(liveOptions["rc"] == "cbr" && liveOptions["bitrate"] == "1500" && liveOptions["subme"] == "2",
                    "live: \(liveOptions)")
            #expect(recordOptions["rc"] == "crf" && recordOptions["crf"] == "30.0" && recordOptions["subme"] == "0",
                    "recording: \(recordOptions)")
            // The live stream keeps its CBR at nginx; the constant-quality recording of this simple
            // picture needs a fraction of it.
            let liveKbps = try MediaProbe.videoKbpsPerSecond(live).dropFirst().dropLast()
            let recordKbps = try MediaProbe.videoKbpsPerSecond(file).dropFirst().dropLast()
            try #require(!liveKbps.isEmpty && !recordKbps.isEmpty, "live \(liveKbps), recording \(recordKbps)")
            let liveMean = liveKbps.reduce(0, +) / liveKbps.count, recordMean = recordKbps.reduce(0, +) / recordKbps.count
            #expect((1200...1800).contains(liveMean), "live \(liveKbps) kbps, want about 1500")
            #expect(recordMean * 3 < liveMean, "recording \(recordKbps) kbps against live \(liveKbps)")
            let liveFrames = try MediaProbe.decodedFrameCount(live), recordFrames = try MediaProbe.decodedFrameCount(file)
            #expect((95...130).contains(liveFrames) && (95...130).contains(recordFrames),
                    "live \(liveFrames), recording \(recordFrames) frames of about 120")
        }
    }
}

/// Bad encoder choices are refused before anything starts, naming the option and what it takes.
@Suite(.timeLimit(.minutes(10))) struct EncoderChoiceOptionTests {
    let livepush = BuiltProducts.path("livepush")

    @Test(arguments: [
        (["--preset", "slow"], "--preset 'slow' is not ultrafast, superfast, veryfast, faster, fast or medium"),
        (["--profile", "high10"], "--profile 'high10' is not baseline, main or high"),
        (["--tune", "fast"], "--tune 'fast' is not zerolatency, film, animation, grain, stillimage or fastdecode"),
        (["--threads", "65"], "--threads 65 is outside 0...64"),
        (["--record-quality", "crf=60"], "--record-quality 'crf=60': crf 60 is outside 0...51; write crf=N[,preset=P]"),
        (["--record-quality", "quality=20"], "--record-quality 'quality=20': 'quality' is neither crf nor preset"),
        (["--record-quality", "crf=20,preset=placebo"], "preset 'placebo' is not ultrafast, superfast"),
    ])
    func badValueIsNamedWithWhatIsAllowed(options: [String], message: String) throws {
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4"] + options)
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.standardError.contains(message), "\(result.standardError)")
    }

    @Test func configFileTakesTheSameChoices() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("enc")).path + ".json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try #"{"preset": "fast", "profile": "main", "tune": "film", "encoderThreads": 3, "recordingQuality": "crf=21"}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--config", path, "--print-config"])
        #expect(result.exitCode == 0, "\(result)")
        for pair in [#""preset":"fast""#, #""profile":"main""#, #""tune":"film""#, #""encoderThreads":3"#,
                     #""recordingQuality":"crf=21""#] {
            #expect(result.standardOutput.replacingOccurrences(of: " ", with: "").contains(pair), "\(result.standardOutput)")
        }
        try #"{"preset": "slow"}"#.write(toFile: path, atomically: true, encoding: .utf8)
        let bad = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--config", path])
        #expect(bad.exitCode == 2 && bad.standardError.contains("key 'preset': 'slow' is not ultrafast"), "\(bad)")
    }
}
