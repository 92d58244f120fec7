import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush push` to RTMPS, SRT and RTMP with the keys kept out of sight: from a private
    /// `--url-file` and from `LIVEPUSH_URL`. What the servers received is decoded; no key, stream
    /// id or passphrase is in `/proc/PID/cmdline` or in any line printed.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmps)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, TLS front and PipeWire (make test)"), .timeLimit(.minutes(10)))
    struct SecureDestinationTests {
        let livepush = BuiltProducts.path("livepush")

        /// A file only its owner can read, holding `lines`.
        private func privateFile(_ lines: [String], mode: mode_t = 0o600) throws -> String {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("urls")).path
            try Data((["# push destinations"] + lines).joined(separator: "\n").utf8 + [0x0A])
                .write(to: URL(fileURLWithPath: path))
            chmod(path, mode)
            return path
        }

        /// Runs `livepush push ARGUMENTS` for `seconds`; returns its result and its command line as
        /// /proc showed it while it ran. A run that is refused at once (`exitsAtOnce`) may end before
        /// /proc can be read: its command line is then the argument list it was exec'd with, which
        /// is what /proc would have shown.
        private func push(_ arguments: [String], environment: [String: String] = [:], seconds: Int = 4,
                          exitsAtOnce: Bool = false) throws -> (result: CommandResult, commandLine: String)
        {
            let fullArguments = ["push"] + arguments + [
                "--display", try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240",
                "--duration", String(seconds),
            ]
            let command = try ProcessRunner.start(livepush, fullArguments, environment: environment)
            var commandLine = ""
            // Until the child has exec'd livepush (before, /proc shows the test's own command line).
            let execd = waitUntil(timeoutSeconds: 5) {
                let raw = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(command.processIdentifier)/cmdline")))
                    ?? Data()
                commandLine = String(decoding: raw.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
                return commandLine.contains(" push ") || (exitsAtOnce && !command.isRunning)
            }
            #expect(execd, "never saw livepush's command line: '\(commandLine)'")
            let result = command.finish()
            if !commandLine.contains(" push ") {
                #expect(exitsAtOnce, "livepush ended before its command line could be read")
                commandLine = ([livepush] + fullArguments).joined(separator: " ")
            }
            return (result, commandLine)
        }

        private func expectNowhere(_ secrets: [String], _ run: (result: CommandResult, commandLine: String)) {
            for secret in secrets {
                #expect(!run.commandLine.contains(secret), "'\(secret)' in /proc/PID/cmdline: \(run.commandLine)")
                #expect(!run.result.standardOutput.contains(secret) && !run.result.standardError.contains(secret),
                        "'\(secret)' printed: \(run.result)")
            }
        }

        /// Codec, size, frame rate and the mic's tone of what a server received.
        private func expectStream(_ path: String, frames: ClosedRange<Int>) throws {
            let stream = try MediaProbe.videoStream(path)
            #expect(stream["codec_name"] == "h264" && stream["width"] == "320" && stream["height"] == "240", "\(stream)")
            #expect(stream["r_frame_rate"] == "30/1", "\(stream)")
            let count = Int(stream["nb_read_frames"] ?? "") ?? 0
            #expect(frames.contains(count), "\(count) frames, expected \(frames)")
            let samples = Array(try AudioAnalysis.decodeMono(path).dropFirst(48000))
            let hz = AudioAnalysis.dominantFrequencyHz(samples, sampleRateHz: 48000)
            #expect(abs(hz - (try TestEnvironment.toneHz())) < 5, "the mic's tone arrived at \(hz) Hz")
        }

        @Test(.timeLimit(.minutes(10))) func rtmpsFromAURLFileArrivesDecodedWithTheKeyNowhere() throws {
            let key = UniqueName.make("tlskey")
            let file = try privateFile([try TestEnvironment.rtmpsURL(key: key)])
            defer { try? FileManager.default.removeItem(atPath: file) }
            let run = try push(["--url-file", file, "--ca-file", try TestEnvironment.testCAFile()])
            #expect(run.result.exitCode == 0, "\(run.result)")
            #expect(run.result.standardOutput.contains(" of 320x240 at 30 fps to rtmps://127.0.0.1:"), "\(run.result)")
            #expect(run.result.standardOutput.contains("/record/****"), "\(run.result)")
            expectNowhere([key], run)
            let recorded = try TestEnvironment.recordedFile(key: key).path
            #expect(waitUntil(timeoutSeconds: 5) { FileManager.default.fileExists(atPath: recorded) })
            try expectStream(recorded, frames: 95...125)
        }

        /// Three destinations, one of each scheme, sharing one encode.
        @Test(.timeLimit(.minutes(10))) func srtRTMPAndRTMPSFromTheEnvironmentArriveWithNoSecretShown() throws {
            let passphrase = "env-passphrase-\(UInt32.random(in: 0...UInt32.max))"
            let streamID = UniqueName.make("sid")
            let key = UniqueName.make("envkey"), tlsKey = UniqueName.make("envtls")
            let listener = try SRTListener(passphrase: passphrase)
            let urls = [listener.callerURL("streamid=\(streamID)&passphrase=\(passphrase)&latency=120"),
                        try TestEnvironment.recordURL(key: key), try TestEnvironment.rtmpsURL(key: tlsKey)]
            let run = try push(["--quiet", "--ca-file", try TestEnvironment.testCAFile()],
                               environment: ["LIVEPUSH_URL": urls.joined(separator: " ")])
            #expect(run.result.exitCode == 0, "\(run.result)")
            #expect(run.result.standardOutput.contains(
                " fps to srt://127.0.0.1:\(listener.port)?streamid=****&passphrase=****&latency=120"), "\(run.result)")
            #expect(run.result.standardOutput.contains("/record/****"), "\(run.result)")
            // One end line per destination: "Pushed 00:00:04.0 (416 kB) of 320x240 at 30 fps to URL".
            #expect(run.result.standardOutput.split(separator: "\n").filter { $0.hasPrefix("Pushed ") }.count == 3,
                    "\(run.result)")
            expectNowhere([passphrase, streamID, key, tlsKey], run)
            _ = listener.finish()
            try expectStream(listener.outputPath, frames: 95...125)
            try expectStream(try TestEnvironment.recordedFile(key: key).path, frames: 95...125)
            try expectStream(try TestEnvironment.recordedFile(key: tlsKey).path, frames: 95...125)
        }

        @Test(.timeLimit(.minutes(10))) func aMistypedURLIsRefusedWithoutShowingItsKey() throws {
            let key = UniqueName.make("typo")
            let result = try ProcessRunner.run(livepush, ["push", "rtmp:/127.0.0.1/live/\(key)", "--quiet"])
            #expect(result.exitCode == 2, "\(result)")
            #expect(result.standardError.contains("rtmp:..."), "\(result)")
            #expect(!result.standardError.contains(key) && !result.standardOutput.contains(key), "\(result)")
        }

        @Test(.timeLimit(.minutes(10))) func aURLFileOthersCanReadIsRefusedWithoutShowingIt() throws {
            let key = UniqueName.make("leaky")
            let file = try privateFile([try TestEnvironment.recordURL(key: key)], mode: 0o644)
            defer { try? FileManager.default.removeItem(atPath: file) }
            let run = try push(["--url-file", file], exitsAtOnce: true)
            #expect(run.result.exitCode == 2, "\(run.result)")
            #expect(run.result.standardError.contains(
                "the URL file '\(file)' is readable by group or others (mode 644); it holds stream keys: "
                    + "make it private with 'chmod 600 \(file)'"), "\(run.result)")
            expectNowhere([key], run)
        }
    }
}
