import CommandLineSupport
import Foundation

/// A large recording (issue 22): `livepush screen` recording a moving screen of `--size` (default
/// 3840x2160, 30 fps, CBR 20000 kbps) on a private Xvfb, against ffmpeg's x11grab + libx264 at the
/// same settings, in one run. fps= is frames over the file's duration; speed= the file's duration
/// over the wall time of the run (ffmpeg's MP4 is constant rate: when it falls behind it repeats
/// frames and takes longer, so its speed drops below 1 while its fps stays 30).
enum RecordScaleBenchmark {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "Length of each recording (default 20)."),
        .value("runs", valueName: "N", help: "Runs of each; the median is printed (default 1)."),
        .value("painter", valueName: "PATH", help: "The x11-paint test client that moves content on the screen."),
        .value("size", valueName: "WxH", help: "Screen and video size (default 3840x2160)."),
        .value("fps", valueName: "N", help: "Frames per second (default 30)."),
        .value("bitrate", valueName: "KBPS", help: "Constant bitrate of both (default 20000)."),
    ]

    struct Measurement {
        var cpuPct: Double
        var rssMiB: Double
        var fps: Double
        var speed: Double
    }

    static func main(_ arguments: [String]) -> Never {
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "record-size")
        guard let painterPath = parsed.value("painter") else {
            Terminal.printError("livepush-bench record-size: --painter PATH (tools/testclients/x11-paint.c, built) is required")
            Terminal.exit(.usage)
        }
        let seconds = parsed.seconds(default: 20)
        let runs = parsed.runs(default: 1)
        let size = parsed.value("size") ?? "3840x2160"
        let fps = Int(parsed.value("fps") ?? "30") ?? 30
        let kbps = Int(parsed.value("bitrate") ?? "20000") ?? 20000
        let sides = size.split(separator: "x").compactMap { Int($0) }
        guard sides.count == 2 else {
            Terminal.printError("livepush-bench record-size: --size '\(size)' is not WIDTHxHEIGHT")
            Terminal.exit(.usage)
        }
        let name = "\(sides[1])p\(fps)"
        do {
            let xvfb = try PrivateXvfb(size: size)
            defer { xvfb.stop() }
            let painter = Process()
            painter.executableURL = URL(fileURLWithPath: painterPath)
            // The time code pattern moves a band (a 240 px square, 12 px a 60 Hz step) and redraws
            // only that band: the X server is not kept busy repainting 33 MB frames.
            painter.arguments = ["--display", xvfb.display, "--geometry", "\(size)+0+0", "timecode", "1e2a3a", "ffcc00",
                                 "240", "12"]
            painter.standardInput = Pipe()
            painter.standardOutput = FileHandle.nullDevice
            try painter.run()
            defer { painter.terminate(); painter.waitUntilExit() }
            Thread.sleep(forTimeInterval: 0.5)
            var ours: [Measurement] = [], theirs: [Measurement] = []
            for run in 1...runs {
                let output = "/tmp/lpb-record-size-\(getpid())-\(run)"
                defer {
                    try? FileManager.default.removeItem(atPath: output + ".mp4")
                    try? FileManager.default.removeItem(atPath: output + "-ffmpeg.mp4")
                }
                ours.append(try measure(BenchSupport.sibling("livepush").path, [
                    "screen", output + ".mp4", "--display", xvfb.display, "--resolution", size, "--fps", String(fps),
                    "--gop", "2", "--quality", "custom", "--bitrate", String(kbps), "--min-bitrate", String(kbps),
                    "--initial-bitrate", String(kbps), "--no-auto-bitrate", "--duration", String(seconds), "--quiet",
                ], seconds: seconds, output: output + ".mp4"))
                theirs.append(try measure("/usr/bin/ffmpeg", [
                    "-nostdin", "-loglevel", "fatal", "-y", "-f", "x11grab", "-framerate", String(fps), "-video_size",
                    size, "-i", xvfb.display, "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency",
                    "-b:v", "\(kbps)k", "-maxrate", "\(kbps)k", "-bufsize", "\(kbps)k", "-g", String(2 * fps),
                    "-pix_fmt", "yuv420p", "-t", String(seconds), output + "-ffmpeg.mp4",
                ], seconds: seconds, output: output + "-ffmpeg.mp4"))
                FileHandle.standardError.write(Data(String(format: "record-size run %d/%d: e2e cpu_pct=%.1f fps=%.1f "
                    + "speed=%.2f, ffmpeg cpu_pct=%.1f fps=%.1f speed=%.2f\n", run, runs, ours.last!.cpuPct,
                    ours.last!.fps, ours.last!.speed, theirs.last!.cpuPct, theirs.last!.fps, theirs.last!.speed).utf8))
            }
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            for (label, all) in [("e2e", ours), ("ffmpeg", theirs)] {
                print(String(format: "%@ record %@ cpu_pct=%.1f rss_mib=%.1f fps=%.1f speed=%.2f", label, name,
                             median(all.map(\.cpuPct)), median(all.map(\.rssMiB)), median(all.map(\.fps)),
                             median(all.map(\.speed))))
            }
            print(String(format: "record ratios %@ cpu=%.2f", name, median(ours.map(\.cpuPct)) / median(theirs.map(\.cpuPct))))
        } catch {
            Terminal.printError("livepush-bench record-size: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    static func measure(_ executable: String, _ arguments: [String], seconds: Double, output: String) throws
        -> Measurement
    {
        let started = Date()
        let run = try RecordBenchmark.measure(executable, arguments, seconds: seconds)
        let wall = Date().timeIntervalSince(started)
        let probe = try duration(output)
        return Measurement(cpuPct: run.cpuPct, rssMiB: run.rssMiB, fps: try RecordBenchmark.framesPerSecond(output),
                           speed: probe / wall)
    }

    static func duration(_ path: String) throws -> Double {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-show_entries", "format=duration", "-of", "default=noprint_wrappers=1:nokey=1",
                           path]
        let output = Pipe()
        probe.standardOutput = output
        try probe.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        return Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }
}
