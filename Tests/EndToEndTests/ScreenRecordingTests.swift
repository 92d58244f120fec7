import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush screen` records the test Xvfb through its own capture helper; ffprobe and ffmpeg
    /// check what the file holds.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11), "needs the test Xvfb (make test)"), .timeLimit(.minutes(10)))
    struct ScreenRecordingTests {
        let livepush = BuiltProducts.path("livepush")

        private func temporaryPath(_ ext: String) -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("screen")).path + "." + ext
        }

        private func paint(_ arguments: [String]) throws -> RunningCommand { try X11Painter.start(arguments).painter }

        private func probe(_ path: String) throws -> [String: String] { try MediaProbe.videoStream(path) }

        /// The RGB of pixel (x, y) of frame `index`, decoded by ffmpeg.
        private func decodedPixel(_ path: String, frame index: Int, x: Int, y: Int, width: Int) throws -> [Int] {
            let bytes = try MediaProbe.decodedRGB(path, frame: index)
            let offset = (y * width + x) * 3
            guard bytes.count >= offset + 3 else { return [] }
            return bytes[offset..<offset + 3].map(Int.init)
        }

        @Test func screenRegionIsRecordedWithItsColoursSizeAndRate() throws {
            let painter = try paint(["--geometry", "320x240+300+200", "bars"])
            defer { painter.closeInput(); _ = painter.finish() }
            let path = temporaryPath("mp4")
            defer { try? FileManager.default.removeItem(atPath: path) }
            let result = try ProcessRunner.run(livepush, [
                "screen", path, "--display", try TestEnvironment.display(), "--region", "300,200,320,240", "--no-cursor",
                "--resolution", "320x240", "--fps", "30", "--duration", "3", "--quiet",
            ], timeoutSeconds: 30)
            #expect(result.exitCode == 0, "\(result)")
            #expect(result.standardOutput.hasPrefix("Recorded 00:00:0"))
            #expect(result.standardOutput.contains(" of 320x240 at 30 fps to \(path) ("))
            let stream = try probe(path)
            #expect(stream["codec_name"] == "h264" && stream["width"] == "320" && stream["height"] == "240")
            #expect(stream["r_frame_rate"] == "30/1")
            let frames = Int(stream["nb_read_frames"] ?? "") ?? 0
            #expect((75...95).contains(frames), "3 s at 30 fps, got \(frames) frames")
            let duration = try #require(Double(stream["duration"] ?? ""), "ffprobe gave no duration: \(stream)")
            #expect(abs(duration - Double(frames) / 30) <= 1.0 / 30 + 0.001, "duration \(duration) for \(frames) frames")
            // Bars of 40 px: white, yellow, cyan, green, magenta, red, blue, black.
            let expected: [(Int, [Int])] = [(20, [255, 255, 255]), (60, [255, 255, 0]), (100, [0, 255, 255]),
                                             (140, [0, 255, 0]), (180, [255, 0, 255]), (220, [255, 0, 0]),
                                             (260, [0, 0, 255]), (300, [0, 0, 0])]
            for (x, rgb) in expected {
                let pixel = try decodedPixel(path, frame: frames / 2, x: x, y: 120, width: 320)
                #expect(pixel.count == 3 && zip(pixel, rgb).allSatisfy { abs($0 - $1) <= 16 },
                        "bar at x=\(x): decoded \(pixel), drew \(rgb)")
            }
        }

        /// An existing file is refused before anything starts (exit 2, the way out named); with
        /// `--overwrite` it is replaced by a recording that plays; a FIFO is refused even then.
        @Test func existingFileIsRefusedBeforeTheStartOrReplacedWithOverwrite() throws {
            let path = temporaryPath("mp4")
            FileManager.default.createFile(atPath: path, contents: Data([1]))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let arguments = ["screen", path, "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                             "--resolution", "320x240", "--no-mic", "--duration", "2", "--quiet"]
            let refused = try ProcessRunner.run(livepush, arguments)
            #expect(refused.exitCode == 2, "\(refused)")
            #expect(refused.standardError.contains(
                "livepush screen: invalid argument '\(path)': the file exists: give --overwrite to replace it, or record to another name"),
                    "\(refused)")
            let replaced = try ProcessRunner.run(livepush, arguments + ["--overwrite"])
            #expect(replaced.exitCode == 0, "\(replaced)")
            #expect(try MediaProbe.decodedFrameCount(path) > 0, "the replaced file holds the new recording")
            #expect(try MediaProbe.decodeErrors(path).isEmpty)
            let fifo = temporaryPath("mkv")
            #expect(mkfifo(fifo, 0o600) == 0)
            defer { try? FileManager.default.removeItem(atPath: fifo) }
            let notAFile = try ProcessRunner.run(livepush, ["screen", fifo, "--overwrite", "--duration", "1", "--quiet"])
            #expect(notAFile.exitCode == 2 && notAFile.standardError.contains("is a FIFO (named pipe), not a file to record into"),
                    "\(notAFile)")
        }

        @Test func unsupportedExtensionAndUnwritablePlaceAreRefused() throws {
            let avi = try ProcessRunner.run(livepush, ["screen", temporaryPath("avi"), "--duration", "1", "--quiet",
                                                       "--display", try TestEnvironment.display()])
            #expect(avi.exitCode == 1)
            #expect(avi.standardError.contains("unsupported extension (-2); use .mp4, .mkv or .flv"))
            let denied = try ProcessRunner.run(livepush, ["screen", "/proc/livepush-test.mp4", "--duration", "1", "--quiet",
                                                          "--display", try TestEnvironment.display()])
            #expect(denied.exitCode == 1)
            #expect(denied.standardError.contains("no permission to write there (-8)"))
        }

        @Test func badConfigurationIsAUsageErrorNamingTheOption() throws {
            let result = try ProcessRunner.run(livepush, ["screen", temporaryPath("mp4"), "--fps", "0"])
            #expect(result.exitCode == 2)
            #expect(result.standardError.contains("fps"))
        }

        /// `kill -9` in the middle of a recording, in every container: what was written decodes, the
        /// decoder gets every frame the container holds, and the helper does not outlive its pusher.
        @Test(.timeLimit(.minutes(10)), arguments: ["mp4", "mkv", "flv"])
        func recordingSurvivesSIGKILL(container: String) throws {
            let painter = try paint(["--geometry", "320x240+700+600", "square", "202020", "e0e0e0", "40", "6"])
            defer { painter.closeInput(); _ = painter.finish() }
            let path = temporaryPath(container)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let recorder = try ProcessRunner.start(livepush, [
                "screen", path, "--display", try TestEnvironment.display(), "--region", "700,600,320,240",
                "--resolution", "320x240", "--gop", "1", "--quiet", "--no-mic",
            ])
            let group = "screen-\(recorder.processIdentifier)"
            // Kill it once the file holds two seconds of frames, as read back by ffprobe.
            let deadline = Date().addingTimeInterval(30)
            var framesBeforeKill = 0
            while framesBeforeKill < 60 && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.25)
                framesBeforeKill = (try? MediaProbe.packetCount(path)) ?? 0
            }
            try #require(framesBeforeKill >= 60, "the recording held \(framesBeforeKill) frames after 30 s")
            try #require(!helperProcesses(group: group).isEmpty, "no helper running on group \(group)")
            kill(recorder.processIdentifier, SIGKILL)
            _ = recorder.finish()

            let packets = try MediaProbe.packetCount(path)
            let decoded = try MediaProbe.decodedFrameCount(path)
            #expect(packets >= framesBeforeKill, "\(packets) packets in the file, \(framesBeforeKill) before the kill")
            // Every frame the container holds decodes, but the one a kill may have cut in half.
            #expect(decoded >= packets - 1 && decoded <= packets, "\(decoded) frames decoded of \(packets) packets")
            let decode = try ProcessRunner.run(
                "ffmpeg", ["-nostdin", "-v", "error", "-i", path] + MediaProbe.nullOutput)
            #expect(decode.exitCode == 0, "\(decode)")
            let errors = decode.standardError.split(separator: "\n").filter { !MediaProbe.isTruncatedTail(String($0)) }
            #expect(errors.isEmpty, "decode errors beyond the truncated tail: \(errors)")

            // The helper notices that its pusher's socket closed and exits by itself.
            let helperDeadline = Date().addingTimeInterval(10)
            while !helperProcesses(group: group).isEmpty && Date() < helperDeadline {
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(helperProcesses(group: group).isEmpty, "the capture helper of group \(group) outlived its pusher")
        }

        /// The pids of livepush-capture processes serving `group`, from /proc.
        private func helperProcesses(group: String) -> [Int32] {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap(Int32.init).filter { pid in
                guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
                let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
                guard let first = arguments.first, first.hasSuffix("livepush-capture") else { return false }
                return zip(arguments, arguments.dropFirst()).contains { $0 == "--group" && $1 == group }
            }
        }
    }
}
