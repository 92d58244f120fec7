import CommandLineSupport
import Foundation

/// What the replay buffer costs (issue 34): `livepush screen` recording a moving 1080p30 screen for
/// the buffer's length and more, once with `--replay-buffer SECONDS` and once without; the pusher's
/// resident set at the end of each, and the buffer's own bytes as its statistics report them.
enum ReplayBenchmark {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "The replay buffer's length (default 30); each run lasts N + 8 s."),
        .value("runs", valueName: "N", help: "Runs of each; the medians are printed (default 1)."),
        .value("painter", valueName: "PATH", help: "The x11-paint test client that moves content on the screen."),
    ]

    struct Measurement {
        /// The pusher's VmRSS just before it stopped.
        var pusherRssMiB: Double
        /// The buffer's bytes in the last statistics event (0 without a buffer).
        var bufferMiB: Double
    }

    static func main(_ arguments: [String]) -> Never {
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "replay")
        guard let painterPath = parsed.value("painter") else {
            Terminal.printError("livepush-bench replay: --painter PATH (tools/testclients/x11-paint.c, built) is required")
            Terminal.exit(.usage)
        }
        let seconds = Int(parsed.seconds(default: 30))
        let runs = parsed.runs(default: 1)
        do {
            let xvfb = try PrivateXvfb(size: "1920x1080")
            defer { xvfb.stop() }
            let painter = try RecordBenchmark.startPainter(painterPath, display: xvfb.display)
            defer { painter.terminate(); painter.waitUntilExit() }
            var with: [Measurement] = [], without: [Measurement] = []
            for _ in 0..<runs {
                with.append(try measure(display: xvfb.display, replaySeconds: seconds))
                without.append(try measure(display: xvfb.display, replaySeconds: nil))
            }
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            let withRss = median(with.map(\.pusherRssMiB)), withoutRss = median(without.map(\.pusherRssMiB))
            print(String(format: "e2e replay 1080p30 seconds=%d rss_mib=%.1f buffer_mib=%.1f pusher_rss_mib=%.1f base_rss_mib=%.1f",
                         seconds, withRss - withoutRss, median(with.map(\.bufferMiB)), withRss, withoutRss))
        } catch {
            Terminal.printError("livepush-bench replay: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    /// One `livepush screen` run of `seconds + 8` s at 4500 kbps (as `record`), with or without the buffer.
    static func measure(display: String, replaySeconds: Int?) throws -> Measurement {
        let stem = "/tmp/livepush-bench-replay-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let output = stem + ".mp4", events = stem + ".jsonl"
        defer { for file in [output, events] { try? FileManager.default.removeItem(atPath: file) } }
        let runSeconds = (replaySeconds ?? 30) + 8
        let process = Process()
        process.executableURL = BenchSupport.sibling("livepush")
        process.arguments = [
            "screen", output, "--display", display, "--resolution", "1080p", "--fps", "30", "--gop", "2",
            "--quality", "custom", "--bitrate", "4500", "--min-bitrate", "4500", "--initial-bitrate", "4500",
            "--no-mic", "--duration", String(runSeconds), "--quiet", "--events", events,
        ] + (replaySeconds.map { ["--replay-buffer", String($0)] } ?? [])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let started = Date()
        try process.run()
        var rssKiB = 0
        while process.isRunning {
            Thread.sleep(forTimeInterval: 0.25)
            // The last reading before the run's end: the buffer is full by then.
            if Date().timeIntervalSince(started) < Double(runSeconds) - 0.5 {
                rssKiB = RecordBenchmark.rssKiB(process.processIdentifier)
            }
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CaptureBenchmark.Failure(description: "livepush screen exited with \(process.terminationStatus)")
        }
        let lines = ((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").split(separator: "\n")
        let bufferBytes = lines.reversed().lazy.compactMap { line -> Int? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["type"] as? String == "statistics" else { return nil }
            return object["replayBufferBytes"] as? Int ?? (object["statistics"] as? [String: Any])?["replayBufferBytes"] as? Int
        }.first ?? 0
        return Measurement(pusherRssMiB: Double(rssKiB) / 1024, bufferMiB: Double(bufferBytes) / 1_048_576)
    }
}
