import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// A recording split into numbered files (issue 34, item 4): by duration, by size and on command,
    /// under a CPU hog. x11-paint's time code (the push benchmark's clock: the monotonic ms drawn at
    /// 240 Hz into every picture) tells each picture from the next. The recording is made beside a
    /// push, of the same encode: the files' pictures, one after another, must be the pictures nginx
    /// received, none missing and none twice (the capture itself repeats and skips pictures under
    /// the hog, so the stream, not the clock's steps, is the reference); the sound at each join is
    /// read from packet times.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.pipewire)
                    && TestEnvironment.isEnabled(.rtmp), "needs the test Xvfb, PipeWire and nginx-rtmp (make test)"),
           .timeLimit(.minutes(10)))
    struct RecordSplitTests {
        let livepush = BuiltProducts.path("livepush")
        /// The time code's row (52 blocks of 32 px from (32, 32)) and a band for its moving square.
        static let width = 1728, height = 256
        static let codeX = 32, codeY = 32, block = 32, blocks = 52

        private func base(_ ext: String = "mkv") -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("split")).path + "." + ext
        }

        private func numbered(_ path: String, _ number: Int) -> String {
            (path as NSString).deletingPathExtension + String(format: "-%03d.", number) + (path as NSString).pathExtension
        }

        private func removeAll(_ path: String) {
            try? FileManager.default.removeItem(atPath: path)
            for number in 1...20 { try? FileManager.default.removeItem(atPath: numbered(path, number)) }
        }

        private func painter() throws -> RunningCommand {
            try X11Painter.start(["--geometry", "\(Self.width)x\(Self.height)+0+0", "timecode", "1e2a3a", "ffcc00", "64", "6"])
                .painter
        }

        private func captureArguments() throws -> [String] {
            ["--display", try TestEnvironment.display(), "--region", "0,0,\(Self.width),\(Self.height)", "--no-cursor",
             "--resolution", "\(Self.width)x\(Self.height)", "--mic", try TestEnvironment.microphone()]
        }

        /// The time code of every picture of `path` in display order (nil where a picture holds no valid code).
        private func timeCodes(_ path: String) throws -> [UInt64?] {
            let raw = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("codes")).path + ".gray"
            defer { try? FileManager.default.removeItem(atPath: raw) }
            let rowWidth = Self.blocks * Self.block
            let decode = try ProcessRunner.run("ffmpeg", [
                "-nostdin", "-v", "error", "-y", "-i", path, "-fps_mode", "passthrough",
                "-vf", "crop=\(rowWidth):\(Self.block):\(Self.codeX):\(Self.codeY),format=gray",
                "-f", "rawvideo", "-pix_fmt", "gray", raw,
            ], timeoutSeconds: 60)
            #expect(decode.exitCode == 0, "\(decode)")
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
            let frameBytes = rowWidth * Self.block
            return stride(from: 0, to: bytes.count - frameBytes + 1, by: frameBytes).map { start in
                // Each block's mean over the 8 x 8 px at its centre, white above mid-grey.
                let bits = (0..<Self.blocks).map { index -> Bool in
                    var sum = 0
                    for y in 12..<20 {
                        for x in index * Self.block + 12..<index * Self.block + 20 { sum += Int(bytes[start + y * rowWidth + x]) }
                    }
                    return sum / 64 > 128
                }
                return Self.code(bits)
            }
        }

        /// x11-paint's row: guard 1 0, 40 bits of ms, CRC-8 (0x07) of them as 5 bytes, guard 0 1.
        static func code(_ bits: [Bool]) -> UInt64? {
            guard bits[0], !bits[1], !bits[50], bits[51] else { return nil }
            let value = bits[2..<42].reduce(UInt64(0)) { $0 << 1 | ($1 ? 1 : 0) }
            let check = bits[42..<50].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) }
            var crc: UInt8 = 0
            for byte in stride(from: 32, through: 0, by: -8).map({ UInt8(truncatingIfNeeded: value >> UInt64($0)) }) {
                crc ^= byte
                for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
            }
            return crc == check ? value : nil
        }

        /// What a file holds, for the joins.
        struct Part {
            let path: String
            let codes: [UInt64?]
            /// Its pictures' length (last picture's time plus its duration) and its sound's start and end.
            let videoEndS: Double, audioStartS: Double, audioEndS: Double
            let firstIsKeyframe: Bool
            let largestAudioGapS: Double
        }

        private func part(_ path: String) throws -> Part {
            let video = try MediaProbe.packets(path, stream: "v:0"), audio = try MediaProbe.packets(path, stream: "a:0")
            let last = try #require(video.max { $0.timeS < $1.timeS }, "no pictures in \(path)")
            let firstAudio = try #require(audio.first, "no sound in \(path)"), lastAudio = try #require(audio.last)
            let gaps = zip(audio, audio.dropFirst()).map { $1.timeS - ($0.timeS + $0.durationS) }
            return Part(path: path, codes: try timeCodes(path), videoEndS: last.timeS + max(last.durationS, 1.0 / 30),
                        audioStartS: firstAudio.timeS, audioEndS: lastAudio.timeS + lastAudio.durationS,
                        firstIsKeyframe: video.first?.key == true, largestAudioGapS: gaps.max() ?? 0)
        }

        /// The files' pictures, one after another, are the pictures the server received from where the
        /// first file starts: each time code in its place (none missing, none twice at a join or anywhere).
        /// `lengthsMs`: each finished file's length as its `recordSplit` event gives it (to the next file's first picture).
        private func checkPlaysBackToBack(_ parts: [Part], lengthsMs: [Int], stream: [UInt64?], label: String) throws {
            let joined = parts.flatMap(\.codes)
            let first = try #require(joined.firstIndex { $0 != nil }, "\(label): no readable code in the files")
            // Where the files start in the stream: the placing that matches best (a picture the
            // capture repeated holds the same code twice in a row). The recording may start a picture
            // or two before the server's copy and ends before it: what both hold is compared, and
            // that covers every join.
            let placings = stream.indices.filter { stream[$0] == joined[first] }.map { $0 - first }
            func mismatches(_ start: Int) -> Int {
                joined.indices.filter { index in
                    start + index >= 0 && start + index < stream.count && joined[index] != nil
                        && stream[start + index] != nil && joined[index] != stream[start + index]
                }.count
            }
            let start = try #require(placings.min { mismatches($0) < mismatches($1) },
                                     "\(label): the files' first code \(joined[first]!) is not in the stream")
            let steps = stream.compactMap { $0 }.adjacentSteps
            print("\(label): \(joined.count) pictures in \(parts.count) files, from picture \(start) of the stream's "
                + "\(stream.count); \(mismatches(start)) out of place; the capture repeated \(steps.filter { $0 == 0 }.count) "
                + "and skipped \(steps.filter { $0 > 50 }.count) of \(steps.count)")
            #expect(mismatches(start) == 0, "\(label): \(mismatches(start)) pictures of the files are not the stream's in order")
            let lastJoin = parts.dropLast().map(\.codes.count).reduce(0, +)
            #expect(start + parts[0].codes.count > 0 && start + lastJoin + 1 < stream.count,
                    "\(label): the stream (\(stream.count) pictures from \(start)) does not hold every join")
            #expect(lengthsMs.count == parts.count - 1, "\(label): \(lengthsMs.count) lengths for \(parts.count) files")
            for (index, (before, after)) in zip(parts, parts.dropFirst()).enumerated() where index < lengthsMs.count {
                checkJoin(before, after, lengthS: Double(lengthsMs[index]) / 1000, label: label)
            }
        }

        /// The sound goes on where it stopped: the old file's sound past its end (`lengthS`, where the
        /// next file's first picture is; its last pictures may be a few apart when the pusher skipped
        /// some) is where the new file's sound starts, within one AAC frame; the new file starts on a keyframe.
        private func checkJoin(_ before: Part, _ after: Part, lengthS: Double, label: String) {
            #expect(lengthS >= before.videoEndS - 0.001, "\(label): \(before.path) is \(lengthS) s long with pictures to \(before.videoEndS) s")
            let overhangS = before.audioEndS - lengthS
            print("\(label): \(before.path) -> \(after.path): sound past the last picture \(overhangS * 1000) ms, "
                + "the next file's sound starts at \(after.audioStartS * 1000) ms")
            #expect(abs(overhangS - after.audioStartS) <= 0.0214,
                    "\(label): the sound ends \(overhangS) s past the old file's pictures but starts at \(after.audioStartS) s")
            #expect(after.firstIsKeyframe, "\(label): \(after.path) does not start on a keyframe")
        }

        /// What a split push left: its numbered files (checked: each named in the summary and in
        /// order in the `recordSplit` events), those events, every event, and nginx's copy's key.
        struct SplitRun {
            let files: [String]
            let splits: [[String: Any]]
            let events: [[String: Any]]
            let key: String
        }

        /// `livepush push URL --record OUTPUT ARGUMENTS --duration SECONDS` under a CPU hog, at least three files made.
        private func splitPush(_ output: String, _ arguments: [String], seconds: Int) throws -> SplitRun {
            let key = UniqueName.make("split")
            let painter = try painter()
            defer { painter.closeInput(); _ = painter.finish() }
            let eventsPath = base("jsonl")
            defer { try? FileManager.default.removeItem(atPath: eventsPath) }
            let hog = try CPUHog(count: 1)
            let result = try ProcessRunner.run(livepush, ["push", try TestEnvironment.recordURL(key: key), "--record", output]
                + arguments + ["--duration", "\(seconds)", "--quiet", "--events", eventsPath] + captureArguments(),
                timeoutSeconds: 60)
            hog.stop()
            #expect(result.exitCode == 0, "\(result)")
            let files = (1...9).map { numbered(output, $0) }.filter { FileManager.default.fileExists(atPath: $0) }
            #expect(files.count >= 3, "\(files): \(result)")
            #expect(files == (1...files.count).map { numbered(output, $0) } && !FileManager.default.fileExists(atPath: output))
            for file in files {
                #expect(result.standardOutput.contains(" to \(file) ("), "the summary does not name \(file): \(result)")
            }
            let events = try String(contentsOfFile: eventsPath, encoding: .utf8).split(separator: "\n")
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let splits = events.filter { $0["type"] as? String == "recordSplit" }
            #expect(splits.map { $0["previousPath"] as? String ?? "" } == Array(files.dropLast()), "\(splits)")
            #expect(splits.map { $0["path"] as? String ?? "" } == Array(files.dropFirst()), "\(splits)")
            return SplitRun(files: files, splits: splits, events: events, key: key)
        }

        /// `push --record OUT.mkv --record-split 4s` for 15 s gives numbered files of 4 s (within a
        /// GOP), reported one by one (events, summary); played back to back they are the stream.
        @Test func aSplitEveryFourSecondsGivesFilesThatPlayBackToBack() throws {
            let output = base()
            defer { removeAll(output) }
            let run = try splitPush(output, ["--record-split", "4s"], seconds: 15)
            let parts = try run.files.map(part)
            for (index, part) in parts.enumerated() {
                print("split 4s: \(part.path): \(part.videoEndS) s of pictures (\(part.codes.count)), sound "
                    + "\(part.audioStartS)...\(part.audioEndS) s, largest gap \(part.largestAudioGapS) s")
                #expect(part.firstIsKeyframe, "\(part.path) does not start on a keyframe")
                #expect(part.largestAudioGapS < 0.025, "a gap of \(part.largestAudioGapS) s in \(part.path)'s sound")
                if index < parts.count - 1 {  // each file 4 s, and the next keyframe (asked for at 4 s) a GOP at most later
                    #expect(part.videoEndS >= 3.95 && part.videoEndS <= 4.5, "\(part.path) lasts \(part.videoEndS) s")
                }
            }
            let stream = try timeCodes(try TestEnvironment.recordedFile(key: run.key).path)
            try checkPlaysBackToBack(parts, lengthsMs: run.splits.map { $0["durationMs"] as? Int ?? 0 }, stream: stream,
                                     label: "split 4s")
        }

        /// A recording with an encode of its own (`--record-quality`) splits the same way: its encoder
        /// is asked for the keyframe. It encodes the stream's pictures but may leave some out when it
        /// cannot keep up (warning 1580 counts them): the files hold the stream's pictures in order,
        /// none twice, and the pictures missing from them (at the joins or anywhere) are at most those counted.
        @Test func aSplitOfARecordingWithItsOwnEncodeAlsoPlaysBackToBack() throws {
            let output = base()
            defer { removeAll(output) }
            let run = try splitPush(output, ["--record-quality", "crf=20", "--record-split", "3s"], seconds: 11)
            let parts = try run.files.map(part)
            for part in parts.dropLast() {
                // Asked for at 3 s, the keyframe comes out after the encoder's delay: within a GOP (2 s).
                #expect(part.firstIsKeyframe && part.videoEndS >= 2.95 && part.videoEndS <= 5, "\(part.path): \(part.videoEndS) s")
            }
            let dropped = run.events.filter { $0["type"] as? String == "warning" && $0["code"] as? Int == 1580 }
                .compactMap { (($0["extraInfo"] as? [String: Any])?["frames"] as? String).flatMap { Int($0) } }.reduce(0, +)
            // Each readable code of the files found in the stream after the one before.
            let stream = try timeCodes(try TestEnvironment.recordedFile(key: run.key).path)
            let joined = parts.flatMap(\.codes)
            var placed: [(index: Int, at: Int)] = []
            for (index, code) in joined.enumerated() {
                guard let code else { continue }
                let from = (placed.last?.at ?? -1) + 1
                let at = try #require(from < stream.count ? stream[from...].firstIndex(of: code) : nil,
                                      "picture \(index) (code \(code)) is not in the stream after picture \(from - 1)")
                placed.append((index, at))
            }
            let first = try #require(placed.first), last = try #require(placed.last)
            let missing = (last.at - first.at) - (last.index - first.index)
            print("own encode split 3s: \(joined.count) pictures in \(parts.count) files, \(missing) of the stream's missing, "
                + "\(dropped) left out by the recording's encoder")
            #expect(missing >= 0 && missing <= dropped, "\(missing) pictures missing, \(dropped) counted as left out")
            let lengthsMs = run.splits.map { $0["durationMs"] as? Int ?? 0 }
            for (index, (before, after)) in zip(parts, parts.dropFirst()).enumerated() where index < lengthsMs.count {
                checkJoin(before, after, lengthS: Double(lengthsMs[index]) / 1000, label: "own encode split 3s")
            }
        }

        /// `ctl record split` during a recording: the first file keeps its name, the next is `-002`,
        /// `status.recordingPath` names it, and the two play back to back. A split with nothing recorded is refused.
        @Test func aSplitOnCommandStartsTheNextFileAtTheNextKeyframe() throws {
            let output = base()
            defer { removeAll(output) }
            let key = UniqueName.make("ctlsplit")
            let painter = try painter()
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, ["push", try TestEnvironment.recordURL(key: key),
                                                                   "--record", output, "--quiet", "--duration", "60"]
                + captureArguments())
            let hog = try CPUHog(count: 1)
            defer { hog.stop() }
            // Recording for 3 s (by its own progress), then split.
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline && !broadcast.events.contains(where: {
                $0["type"] as? String == "recordProgress" && ($0["durationMs"] as? Int ?? 0) >= 3000
            }) { Thread.sleep(forTimeInterval: 0.1) }
            let split = try broadcast.ctl(["record", "split"])
            #expect(split.result.exitCode == 0 && split.answer?["ok"] as? Bool == true, "\(split)")
            let next = numbered(output, 2)
            let splitDeadline = Date().addingTimeInterval(10)
            while Date() < splitDeadline && !broadcast.events.contains(where: { $0["type"] as? String == "recordSplit" }) {
                Thread.sleep(forTimeInterval: 0.1)
            }
            let event = try #require(broadcast.events.first { $0["type"] as? String == "recordSplit" }, "no recordSplit event")
            #expect(event["previousPath"] as? String == output && event["path"] as? String == next, "\(event)")
            let status = try broadcast.ctl(["status"]).answer?["result"] as? [String: Any]
            #expect(status?["recordingPath"] as? String == next, "\(String(describing: status))")
            Thread.sleep(forTimeInterval: 3)  // the second file's pictures
            #expect(try broadcast.ctl(["record", "stop"]).answer?["ok"] as? Bool == true)
            let refused = try broadcast.ctl(["record", "split"])
            #expect(refused.answer?["ok"] as? Bool != true && "\(refused)".contains("nothing is being recorded"), "\(refused)")
            hog.stop()
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            let before = try part(output), after = try part(next)
            #expect(before.firstIsKeyframe && before.videoEndS >= 3, "\(before.path): \(before.videoEndS) s")
            #expect(after.videoEndS >= 2, "\(after.path): \(after.videoEndS) s")
            let stream = try timeCodes(try TestEnvironment.recordedFile(key: key).path)
            try checkPlaysBackToBack([before, after], lengthsMs: [event["durationMs"] as? Int ?? 0], stream: stream,
                                     label: "ctl split")
        }

        /// `--record-split 1MB`: every file but the last holds about 1 MB (at least that, and at most
        /// a GOP more: the next file waits for a keyframe).
        @Test func aSizeSplitGivesFilesNearThatSize() throws {
            let output = base("mp4")
            defer { removeAll(output) }
            let painter = try painter()
            defer { painter.closeInput(); _ = painter.finish() }
            let result = try ProcessRunner.run(livepush, ["screen", output, "--record-split", "1MB", "--duration", "16",
                                                          "--quiet"] + captureArguments(), timeoutSeconds: 60)
            #expect(result.exitCode == 0, "\(result)")
            let sizes = (1...6).compactMap { number in
                (try? FileManager.default.attributesOfItem(atPath: numbered(output, number))[.size]) as? Int
            }
            print("split 1MB: files of \(sizes) bytes")
            #expect(sizes.count >= 3, "\(sizes): \(result)")
            for size in sizes.dropLast() {
                #expect(size >= 1_000_000 && size <= 1_500_000, "a file of \(size) bytes for a 1 MB split")
            }
            for number in 1...sizes.count {
                #expect(try MediaProbe.decodeErrors(numbered(output, number)).isEmpty)
            }
        }

        /// Nonsense is refused before anything starts (exit 2, what is wrong and what to write), from
        /// the command line and from a `--config` file; a first numbered file that exists is refused too.
        @Test func badSplitValuesAreRefusedBeforeTheStart() throws {
            let output = base()
            defer { removeAll(output) }
            for value in ["0", "10", "0s", "500ms", "0.5s", "0.5MB", "tenminutes", "-4s"] {
                let result = try ProcessRunner.run(livepush, ["screen", output, "--record-split", value, "--duration", "1"],
                                                   timeoutSeconds: 10)
                #expect(result.exitCode == 2, "\(value): \(result)")
                #expect(result.standardError.contains("--record-split"), "\(value): \(result)")
                #expect(!FileManager.default.fileExists(atPath: numbered(output, 1)))
            }
            let noRecording = try ProcessRunner.run(livepush, ["push", "rtmp://127.0.0.1:1/live/x", "--record-split", "10s"],
                                                    timeoutSeconds: 10)
            #expect(noRecording.exitCode == 2 && noRecording.standardError.contains("--record FILE"), "\(noRecording)")
            let config = base("json")
            defer { try? FileManager.default.removeItem(atPath: config) }
            try #"{"recordSplit": "10"}"#.write(toFile: config, atomically: true, encoding: .utf8)
            chmod(config, 0o600)
            let fromFile = try ProcessRunner.run(livepush, ["screen", output, "--config", config], timeoutSeconds: 10)
            #expect(fromFile.exitCode == 2 && fromFile.standardError.contains("key 'recordSplit'"), "\(fromFile)")
            FileManager.default.createFile(atPath: numbered(output, 1), contents: Data("keep".utf8))
            let exists = try ProcessRunner.run(livepush, ["screen", output, "--record-split", "10s"], timeoutSeconds: 10)
            #expect(exists.exitCode == 2 && exists.standardError.contains("--overwrite"), "\(exists)")
            #expect(try String(contentsOfFile: numbered(output, 1), encoding: .utf8) == "keep")
        }
    }
}

extension Array where Element == UInt64 {
    /// The differences between neighbours (ms between pictures, for time codes).
    var adjacentSteps: [Int64] { zip(self, dropFirst()).map { Int64($1) - Int64($0) } }
}
