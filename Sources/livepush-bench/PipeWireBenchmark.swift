import CaptureLink
import CommandLineSupport
import Foundation

/// PipeWire capture: a 1920x1080 BGRx producer at 30 fps (tools/testclients/pw-video-source.c) on
/// the PipeWire daemon of the environment, consumed in turn by `livepush-capture --source pipewire`
/// (into a pusher endpoint here) and by GStreamer's `pipewiresrc ! videoconvert ! fakesink`, in one run.
enum PipeWireBenchmark {
    static let options: [OptionSpec] = [
        .value("producer", valueName: "PATH", help: "The compiled tools/testclients/pw-video-source.c (required)."),
        .value("seconds", valueName: "N", help: "Length of each measurement (default 10)."),
        .value("runs", valueName: "N", help: "Runs of each case; the median is printed (default 1)."),
    ]

    struct Failure: Error, CustomStringConvertible { let description: String }

    static let size = "1920x1080"

    static func main(_ arguments: [String]) -> Never {
        let parsed: ParsedArguments
        do {
            parsed = try ArgumentParser.parse(arguments, options: options)
            guard parsed.value("producer") != nil else { throw ArgumentError.missingArgument("--producer PATH") }
        } catch {
            Terminal.printError("livepush-bench pipewire: \(error)")
            Terminal.exit(.usage)
        }
        let seconds = parsed.seconds(default: 10)
        let runs = parsed.runs(default: 1)
        do {
            let name = "livepush-bench-\(getpid())"
            let producer = try startProducer(parsed.value("producer")!, name: name)
            defer {
                producer.terminate()
                producer.waitUntilExit()
            }
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            var ours: [(fps: Double, copyMs: Double, cpu: Double)] = []
            var gst: [Double] = []
            // Ours first: once a GStreamer consumer has been linked, this producer skips about a
            // quarter of its ticks for every later consumer (no free buffer; docs/benchmarks.md).
            for _ in 0..<runs { ours.append(try measureHelper(target: name, seconds: seconds)) }
            for _ in 0..<runs { gst.append(try measureGStreamer(target: name, seconds: seconds)) }
            print(String(format: "capture pipewire %@ fps=%.1f copy_ms_p50=%.2f helper_cpu_pct=%.1f", size,
                         median(ours.map(\.fps)), median(ours.map(\.copyMs)), median(ours.map(\.cpu))))
            print(String(format: "gst pipewiresrc %@ cpu_pct=%.1f", size, median(gst)))
            fflush(nil)
        } catch {
            Terminal.printError("livepush-bench pipewire: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    /// The PipeWire daemon's socket as an absolute path (the helper runs with a private runtime directory).
    static func daemonSocket() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let remote = environment["PIPEWIRE_REMOTE"], remote.hasPrefix("/") { return remote }
        return (environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())") + "/" + (environment["PIPEWIRE_REMOTE"] ?? "pipewire-0")
    }

    /// Starts a test producer (pw-video-source with the screen's arguments unless others are given)
    /// and waits until its node exists.
    static func startProducer(_ path: String, name: String, arguments: [String]? = nil) throws -> Process {
        let producer = Process()
        producer.executableURL = URL(fileURLWithPath: path)
        producer.arguments = ["--name", name] + (arguments ?? ["--size", size, "--format", "BGRx", "--fps", "30", "--bars"])
        let output = Pipe()
        producer.standardOutput = output
        producer.standardInput = Pipe()  // kept open: the producer runs until terminated
        try producer.run()
        var text = Data()
        let deadline = Date().addingTimeInterval(10)
        while !String(decoding: text, as: UTF8.self).contains("node ") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty || Date() > deadline {
                throw Failure(description: "\(path) did not start (is PipeWire running? run under tools/testenv)")
            }
            text.append(chunk)
        }
        return producer
    }

    /// livepush-capture on the producer into an endpoint whose consumer borrows and releases each frame.
    static func measureHelper(target: String, seconds: Double) throws -> (fps: Double, copyMs: Double, cpu: Double) {
        let consumer = try CountingEndpoint(group: "pipewire")
        defer { consumer.stop() }
        let run = try runHelper(["--group", "pipewire", "--source", "pipewire", "--target", target, "--no-cursor",
                                 "--stats"], into: consumer, seconds: seconds)
        guard let copyMs = KeyValueFields.parse(run.stderr)["copy_ms_p50"] else {
            throw Failure(description: "livepush-capture printed no stats: \(run.stderr)")
        }
        return (Double(run.frames) / run.elapsedSeconds, copyMs, run.cpuPct)
    }

    /// What one run of livepush-capture into a `CountingEndpoint` gave.
    struct HelperRun {
        /// Frames the endpoint received over the measured `elapsedSeconds`.
        var frames: Int
        var elapsedSeconds: Double
        var stderr: String
        /// The helper's CPU, averaged over its whole run (the measured seconds and 1 s of settling).
        var cpuPct: Double
    }

    /// Runs livepush-capture with `arguments` into `consumer` (on the environment's PipeWire), lets it
    /// connect and settle for 1 s (`settled` runs then), counts frames for `seconds`, stops it.
    static func runHelper(_ arguments: [String], into consumer: CountingEndpoint, seconds: Double,
                          settled: () -> Void = {}) throws -> HelperRun
    {
        let helper = Process()
        helper.executableURL = BenchSupport.sibling("livepush-capture")
        helper.arguments = arguments
        helper.environment = ProcessInfo.processInfo.environment.merging(
            ["XDG_RUNTIME_DIR": consumer.runtime, "PIPEWIRE_REMOTE": daemonSocket()]) { $1 }
        let errors = Pipe()
        helper.standardError = errors
        var before = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &before)
        try helper.run()
        Thread.sleep(forTimeInterval: 1)  // connect and settle
        settled()
        let startFrames = consumer.count
        let started = Date()
        Thread.sleep(forTimeInterval: seconds)
        let counted = consumer.count - startFrames
        let elapsed = Date().timeIntervalSince(started)
        consumer.endpoint.requestStop(text: "benchmark done")
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        helper.waitUntilExit()
        var after = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &after)
        if ProcessInfo.processInfo.environment["LIVEPUSH_BENCH_VERBOSE"] != nil {
            FileHandle.standardError.write(Data(("helper: " + stderr).utf8))
        }
        let cpuSeconds = LinkBenchmark.cpuSeconds(after) - LinkBenchmark.cpuSeconds(before)
        return HelperRun(frames: counted, elapsedSeconds: elapsed, stderr: stderr, cpuPct: 100 * cpuSeconds / (seconds + 1))
    }

    /// CPU of `gst-launch-1.0 pipewiresrc target-object=NAME ! videoconvert ! fakesink` over `seconds`.
    static func measureGStreamer(target: String, seconds: Double) throws -> Double {
        let gst = Process()
        gst.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        gst.arguments = ["-q", "pipewiresrc", "target-object=\(target)", "!", "videoconvert", "!", "fakesink"]
        gst.environment = ProcessInfo.processInfo.environment.merging(["PIPEWIRE_REMOTE": daemonSocket()]) { $1 }
        gst.standardOutput = FileHandle.nullDevice
        gst.standardError = FileHandle.nullDevice
        return try BenchSupport.cpuPercent(running: gst, seconds: seconds + 1).cpuPct
    }
}
