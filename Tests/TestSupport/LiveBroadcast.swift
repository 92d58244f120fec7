import Foundation

/// A `livepush screen|push` running in the background for a test, steered with `livepush ctl`
/// like a person would: its control socket's name, its events file, and its output at the end.
public final class LiveBroadcast: @unchecked Sendable {
    public let name: String
    public let eventsPath: String
    public let command: RunningCommand
    private let livepush: String

    /// Starts `livepush ARGUMENTS --name NAME --events FILE` (both made up here); with a
    /// `launcher` (e.g. `["prlimit", "--nofile=1024:1024", "--"]`), through it.
    public init(livepush: String, _ arguments: [String], environment: [String: String] = [:],
                launcher: [String] = []) throws {
        self.livepush = livepush
        name = UniqueName.make("ctl")
        eventsPath = FileManager.default.temporaryDirectory.appendingPathComponent(name + ".jsonl").path
        let words = [livepush] + arguments + ["--name", name, "--events", eventsPath]
        command = try ProcessRunner.start(launcher.first ?? livepush, Array((launcher + words).dropFirst()),
                                          environment: environment)
    }

    deinit { try? FileManager.default.removeItem(atPath: eventsPath) }

    /// `livepush ctl NAME WORDS...`: the result and the answer's JSON object (nil when stdout held none).
    @discardableResult
    public func ctl(_ words: [String]) throws -> (result: CommandResult, answer: [String: Any]?) {
        let result = try ProcessRunner.run(livepush, ["ctl", name] + words, timeoutSeconds: 10)
        let line = result.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
        let answer = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        return (result, answer)
    }

    /// Polls `ctl status` until every destination publishes (connectSuccess), at most `timeoutSeconds`.
    public func waitUntilPublishing(destinations count: Int = 1, timeoutSeconds: Double = 15) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            if command.isRunning, let answer = try? ctl(["status"]).answer,
               let result = answer["result"] as? [String: Any],
               let destinations = result["destinations"] as? [[String: Any]],
               destinations.count == count, destinations.allSatisfy({ $0["status"] as? String == "connectSuccess" })
            {
                return true
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return false
    }

    /// The dashboard's address with its token, as the run printed it (`--dashboard`), waiting for it.
    public func dashboardURL() throws -> String {
        guard command.waitForError("dashboard: http://"),
              let line = command.errorSoFar.split(separator: "\n").first(where: { $0.contains("dashboard: http") }),
              let url = line.split(separator: " ").last
        else { throw NoDashboard(output: command.errorSoFar) }
        return String(url)
    }

    /// The run printed no dashboard address in time; what it printed instead.
    public struct NoDashboard: Error, CustomStringConvertible {
        public let output: String
        public var description: String { "no dashboard address in the run's output: \(output)" }
    }

    /// The event lines written so far, parsed.
    public var events: [[String: Any]] {
        let text = (try? String(contentsOfFile: eventsPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// Ctrl-C, then its output once it has finished cleanly.
    public func stop() -> CommandResult {
        command.interrupt()
        let deadline = Date().addingTimeInterval(20)
        while command.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        return command.finish(timedOut: command.isRunning)
    }
}

/// What nginx received, per second of the stream: read back from its FLV with ffprobe.
public enum ReceivedStream {
    /// (time s, size bytes) of every packet of `stream` ("v:0" or "a:0").
    public static func packets(_ path: String, stream: String) throws -> [(timeS: Double, bytes: Int)] {
        let result = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries",
                                                       "packet=pts_time,size", "-of", "csv=p=0", path])
        guard result.exitCode == 0 else { throw MediaProbe.Failed(result: result) }
        return result.standardOutput.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count == 2, let time = Double(fields[0]), let size = Int(fields[1]) else { return nil }
            return (time, size)
        }
    }

    /// The bitrate in kbps of the packets between `from` and `to` seconds.
    public static func kbps(_ packets: [(timeS: Double, bytes: Int)], from: Double, to: Double) -> Int {
        let bytes = packets.filter { $0.timeS >= from && $0.timeS < to }.reduce(0) { $0 + $1.bytes }
        return Int(Double(bytes) * 8 / 1000 / (to - from))
    }

    /// Every frame of the first video stream scaled to 4x4, as RGB24 (48 bytes a frame).
    public static func tinyFrames(_ path: String) throws -> [[UInt8]] {
        let raw = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("tiny")).path + ".rgb"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let result = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", path, "-an", "-vf",
                                                      "scale=4:4", "-f", "rawvideo", "-pix_fmt", "rgb24", raw])
        guard result.exitCode == 0 else { throw MediaProbe.Failed(result: result) }
        let bytes = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: raw))) ?? Data())
        return stride(from: 0, to: bytes.count - 47, by: 48).map { Array(bytes[$0..<$0 + 48]) }
    }

    /// A red PNG of `width` x `height` at `path` (default: a new temporary file), the pause picture of
    /// tests that tell it from a green screen (`redOrGreen`). Made by ffmpeg; an error when it fails.
    public static func redPicture(width: Int = 320, height: Int = 240, at path: String? = nil) throws -> String {
        let path = path ?? FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("red") + ".png").path
        let result = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                                                      "color=c=red:s=\(width)x\(height)", "-frames:v", "1", path])
        guard result.exitCode == 0 else { throw MediaProbe.Failed(result: result) }
        return path
    }

    /// "red", "green" or "other": a tiny frame's pixel (1,1), for tests whose pause picture is red and
    /// screen green.
    public static func redOrGreen(_ tiny: [UInt8]) -> String {
        let (r, g, b) = (Int(tiny[15]), Int(tiny[16]), Int(tiny[17]))
        if r > 180 && g < 80 && b < 80 { return "red" }
        if g > 180 && r < 80 && b < 80 { return "green" }
        return "other"
    }

    /// The longest run of values that match: where it starts, where it ends (exclusive), its length.
    public static func longestRun<T>(_ values: [T], where matches: (T) -> Bool) -> (start: Int, end: Int, count: Int) {
        var best = (start: 0, end: 0, count: 0), start = 0, count = 0
        for (index, value) in values.enumerated() {
            if matches(value) {
                if count == 0 { start = index }
                count += 1
                if count > best.count { best = (start, index + 1, count) }
            } else {
                count = 0
            }
        }
        return best
    }
}
