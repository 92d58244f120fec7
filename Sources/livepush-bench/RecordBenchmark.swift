import CommandLineSupport
import Foundation

/// The whole job, end to end: `livepush screen` (pusher and helper together) recording a moving
/// 1080p30 screen, against ffmpeg's x11grab + libx264 with the same settings, in one run.
enum RecordBenchmark {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "Length of each recording (default 20)."),
        .value("runs", valueName: "N", help: "Runs of each; the median is printed (default 1)."),
        .value("painter", valueName: "PATH", help: "The x11-paint test client that moves content on the screen."),
    ]

    struct Measurement {
        var cpuPct: Double
        var rssMiB: Double
        var fps: Double
    }

    static func main(_ arguments: [String]) -> Never {
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "record")
        guard let painterPath = parsed.value("painter") else {
            Terminal.printError("livepush-bench record: --painter PATH (tools/testclients/x11-paint.c, built) is required")
            Terminal.exit(.usage)
        }
        let seconds = parsed.seconds(default: 20)
        let runs = parsed.runs(default: 1)
        do {
            let xvfb = try PrivateXvfb(size: "1920x1080")
            defer { xvfb.stop() }
            let painter = try startPainter(painterPath, display: xvfb.display)
            defer { painter.terminate(); painter.waitUntilExit() }
            var ours: [Measurement] = [], theirs: [Measurement] = []
            for _ in 0..<runs {
                ours.append(try measureLivePush(display: xvfb.display, seconds: seconds))
                theirs.append(try measureFFmpeg(display: xvfb.display, seconds: seconds))
            }
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            let ourCpu = median(ours.map(\.cpuPct)), theirCpu = median(theirs.map(\.cpuPct))
            print(String(format: "e2e record 1080p30 cpu_pct=%.1f rss_mib=%.1f fps=%.1f", ourCpu,
                         median(ours.map(\.rssMiB)), median(ours.map(\.fps))))
            print(String(format: "ffmpeg record 1080p30 cpu_pct=%.1f rss_mib=%.1f", theirCpu, median(theirs.map(\.rssMiB))))
            print(String(format: "ratio cpu=%.2f", ourCpu / theirCpu))
        } catch {
            Terminal.printError("livepush-bench record: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    /// A full-screen moving square; its input is a pipe kept open (x11-paint ends at EOF).
    static func startPainter(_ path: String, display: String) throws -> Process {
        let painter = Process()
        painter.executableURL = URL(fileURLWithPath: path)
        painter.arguments = ["--display", display, "--geometry", "1920x1080+0+0", "square", "1e2a3a", "ffcc00", "240", "12"]
        painter.standardInput = Pipe()
        painter.standardOutput = FileHandle.nullDevice
        try painter.run()
        Thread.sleep(forTimeInterval: 0.5)
        return painter
    }

    static func measureLivePush(display: String, seconds: Double) throws -> Measurement {
        let output = "/tmp/livepush-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).mp4"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let livepush = BenchSupport.sibling("livepush")
        let measurement = try measure(livepush.path, [
            "screen", output, "--display", display, "--resolution", "1080p", "--fps", "30", "--gop", "2",
            "--quality", "custom", "--bitrate", "4500", "--min-bitrate", "4500", "--initial-bitrate", "4500",
            "--duration", String(seconds), "--quiet",
        ], seconds: seconds)
        return Measurement(cpuPct: measurement.cpuPct, rssMiB: measurement.rssMiB, fps: try framesPerSecond(output))
    }

    static func measureFFmpeg(display: String, seconds: Double) throws -> Measurement {
        let output = "/tmp/livepush-bench-ffmpeg-\(getpid()).mp4"
        defer { try? FileManager.default.removeItem(atPath: output) }
        return try measure("/usr/bin/ffmpeg", [
            "-nostdin", "-loglevel", "fatal", "-y", "-f", "x11grab", "-framerate", "30", "-video_size", "1920x1080",
            "-i", display, "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-b:v", "4500k",
            "-maxrate", "4500k", "-bufsize", "4500k", "-g", "60", "-t", String(seconds), output,
        ], seconds: seconds)
    }

    /// Runs a command; its CPU (with every descendant it waited for) over wall time, and the
    /// largest RSS of it and its children together, sampled every 250 ms.
    static func measure(_ executable: String, _ arguments: [String], seconds: Double) throws -> Measurement {
        var before = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &before)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let started = Date()
        try process.run()
        var peakRssKiB = 0
        while process.isRunning {
            Thread.sleep(forTimeInterval: 0.25)
            let pids = [process.processIdentifier] + children(of: process.processIdentifier)
            peakRssKiB = max(peakRssKiB, pids.reduce(0) { $0 + rssKiB($1) })
        }
        process.waitUntilExit()
        let elapsed = Date().timeIntervalSince(started)
        var after = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &after)
        guard process.terminationStatus == 0 else {
            throw CaptureBenchmark.Failure(description: "\(executable) exited with \(process.terminationStatus)")
        }
        let cpu = LinkBenchmark.cpuSeconds(after) - LinkBenchmark.cpuSeconds(before)
        return Measurement(cpuPct: 100 * cpu / elapsed, rssMiB: Double(peakRssKiB) / 1024, fps: 0)
    }

    static func children(of pid: Int32) -> [Int32] {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return text.split(separator: " ").compactMap { Int32($0) }
    }

    static func rssKiB(_ pid: Int32) -> Int { ProcessTree.statusKiB(pid, "VmRSS") }

    static func framesPerSecond(_ path: String) throws -> Double {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                           "stream=nb_read_frames:format=duration", "-of", "default=noprint_wrappers=1", path]
        let output = Pipe()
        probe.standardOutput = output
        try probe.run()
        let fields = KeyValueFields.parse(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        probe.waitUntilExit()
        guard let frames = fields["nb_read_frames"], let duration = fields["duration"], duration > 0 else { return 0 }
        return frames / duration
    }
}
