import CommandLineSupport
import Foundation
import Synchronization

/// Pushing the screen, end to end: `livepush push`, ffmpeg's x11grab pipeline and the equivalent
/// GStreamer pipeline each publish a moving 1080p30 screen to the test nginx-rtmp, in one run. A
/// receiver pulls each stream back and reads the time code that x11-paint draws on the screen,
/// for the glass-to-receiver latency. Runs inside `tools/testenv run --screen 1920x1080 -- ...`.
enum PushBenchmark {
    static let options: [OptionSpec] = [
        .value("painter", valueName: "PATH", help: "The x11-paint test client (tools/testclients/x11-paint.c, built)."),
        .value("seconds", valueName: "N", help: "Measured length of each push (default 20)."),
        .value("warmup", valueName: "N", help: "Seconds after the first decoded code before measuring (default 3)."),
        .value("runs", valueName: "N", help: "Runs of each publisher; the median is printed (default 1)."),
        .value("publishers", valueName: "LIST",
               help: "Which publishers (default e2e,ffmpeg,gstreamer,e2e-rtmps,ffmpeg-rtmps,e2e-srt,ffmpeg-srt)."),
        .value("display", valueName: ":N", help: "X display (default $LIVEPUSH_TEST_DISPLAY, else $DISPLAY)."),
        .value("rtmp", valueName: "URL", help: "rtmp://127.0.0.1:PORT (default $LIVEPUSH_TEST_RTMP_URL)."),
        .flag("self-test", help: "Check the time code round trip on the display (painter, x11grab, decoder) and exit."),
        .value("pattern", valueName: "WORDS", help: "Self-test: the painter's pattern (default: a time code)."),
    ] + PushScaleBenchmark.options

    static let size = "1920x1080", fps = 30
    static let ffmpeg = "/usr/bin/ffmpeg"

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// One publisher's figures over one measured window.
    struct Measurement {
        var cpuPct: Double
        var rssMiB: Double
        /// Peak of the summed proportional set sizes (smaps_rollup): shared pages counted once.
        var pssMiB: Double = 0
        var fps: Double
        var latencyP50Ms: Double
        var latencyP95Ms: Double
        /// Distinct pictures (time codes) a second at the receiver: below fps when frames repeat.
        var freshFps: Double = 0
        /// Seconds from a late receiver's start to its first decoded frame (`JoinTime`), one per receiver.
        var joinS: [Double] = []
        /// Peak RSS of the publisher's own process (VmHWM at the end of the window), helpers not counted.
        var publisherPeakRssMiB: Double = 0
    }

    struct Publisher {
        let name: String
        let executable: String
        let arguments: [String]
    }

    static func main(_ arguments: [String]) -> Never {
        BenchSupport.unblockAllSignals()
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "push")
        let environment = ProcessInfo.processInfo.environment
        guard let painter = parsed.value("painter"), let display = BenchSupport.display(parsed)
        else {
            Terminal.printError("livepush-bench push: --painter PATH and a display (--display, or run inside "
                + "tools/testenv run --screen 1920x1080 -- ...) are required")
            Terminal.exit(.usage)
        }
        if parsed.has("self-test") {
            let pattern = parsed.value("pattern").map { $0.split(separator: " ").map(String.init) }
            switch selfTest(painter: painter, display: display, pattern: pattern) {
            case .success(let line):
                print(line)
                Terminal.exit(.success)
            case .failure(let failure):
                print("self-test FAILED: \(failure)")
                Terminal.exit(.failure)
            }
        }
        guard let rtmp = BenchSupport.rtmp(parsed) else {
            Terminal.printError("livepush-bench push: no RTMP server: give --rtmp rtmp://127.0.0.1:PORT or run inside "
                + "tools/testenv run --screen 1920x1080 -- ...")
            Terminal.exit(.usage)
        }
        let seconds = parsed.seconds(default: 20), warmup = parsed.seconds("warmup", default: 3)
        let runs = parsed.runs(default: 1)
        let extra = PushScaleBenchmark.cases(parsed)
        let known = ["e2e", "ffmpeg", "gstreamer"] + transportPublishers
        let names = (parsed.value("publishers") ?? known.joined(separator: ",")).split(separator: ",").map(String.init)
        if let unknown = names.first(where: { !known.contains($0) }) {
            Terminal.printError("livepush-bench push: unknown publisher '\(unknown)' (want \(known.joined(separator: ", ")))")
            Terminal.exit(.usage)
        }
        if environment["PULSE_SERVER"] == nil && names.contains(where: { $0 != "e2e" }) {
            Terminal.printError("livepush-bench push: PULSE_SERVER is not set; ffmpeg's and GStreamer's audio input "
                + "need the test environment's pipewire-pulse (tools/testenv run -- ...)")
            Terminal.exit(.usage)
        }
        let logs = "/tmp/lpb-push-\(getpid())"
        mkdir(logs, 0o755)
        do {
            let painterProcess = try startPainter(painter, display: display, geometry: "\(size)+0+0",
                                                  pattern: ["timecode", "1e2a3a", "ffcc00", "240", "6"])
            defer { stop(painterProcess) }
            var floors: [Double] = []
            var results: [String: [Measurement]] = [:]
            for run in 1...runs {
                floors.append(try measureFloor(display: display, logs: logs))
                log("floor run \(run)/\(runs): latency_ms_p50=\(format(floors.last!))")
                for name in names {
                    let key = "bench-\(name)-\(getpid())-\(run)"
                    let route = try transportRoute(name, key: key, rtmp: rtmp, environment: environment)
                    let publisher = route.map { makeTransportPublisher(name, display: display, route: $0) }
                        ?? makePublisher(name, display: display, url: "\(rtmp)/live/\(key)")
                    let measurement = try measure(publisher, receiverInput: route?.receiverInput
                                                    ?? receiverInput("\(rtmp)/live/\(key)"),
                                                  receiverFirst: route?.receiverFirst ?? false, seconds: seconds,
                                                  warmup: warmup, logs: logs, label: "\(name) run \(run)/\(runs)",
                                                  joinURL: route?.receiverFirst == true ? nil : "\(rtmp)/live/\(key)")
                    results[name, default: []].append(measurement)
                }
            }
            print(String(format: "latency floor x11grab->decoder latency_ms_p50=%.1f", median(floors)))
            for name in names {
                let all = results[name] ?? []
                print(String(format: "%@ 1080p30 cpu_pct=%.1f rss_mib=%.1f fps=%.1f latency_ms_p50=%.1f "
                    + "latency_ms_p95=%.1f pss_mib=%.1f", lineName(name), median(all.map(\.cpuPct)),
                    median(all.map(\.rssMiB)), median(all.map(\.fps)), median(all.map(\.latencyP50Ms)),
                    median(all.map(\.latencyP95Ms)), median(all.map(\.pssMiB)))
                    + JoinTime.field(all) + pusherRssField(name, all))
            }
            if names.contains("e2e") { try JoinKeyframe.run(display: display, runs: runs, logs: logs) }
            if let ours = results["e2e"], let ffmpeg = results["ffmpeg"], let gstreamer = results["gstreamer"] {
                print(String(format: "push ratios cpu_vs_ffmpeg=%.2f latency_p50_vs_gstreamer=%.2f",
                             median(ours.map(\.cpuPct)) / median(ffmpeg.map(\.cpuPct)),
                             median(ours.map(\.latencyP50Ms)) / median(gstreamer.map(\.latencyP50Ms))))
            }
            try PushScaleBenchmark.run(extra, .init(
                painter: painter, display: display, rtmp: rtmp, runs: runs, seconds: seconds, warmup: warmup,
                logs: logs, squareE2ECpuPct: results["e2e"].map { median($0.map(\.cpuPct)) }), publishers: names)
            try? FileManager.default.removeItem(atPath: logs)
        } catch {
            Terminal.printError("livepush-bench push: \(error)\n(logs kept in \(logs))")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    // MARK: The publishers, with the same settings: 1080p30, x264 veryfast/zerolatency CBR 4500 kbps,
    // GOP 2 s, AAC 128 kbps from the default PulseAudio source (the test mic).

    static func makePublisher(_ name: String, display: String, url: String) -> Publisher {
        switch name {
        case "e2e":
            let livepush = BenchSupport.sibling("livepush").path
            return Publisher(name: name, executable: livepush, arguments: [
                "push", url, "--display", display, "--resolution", "1080p", "--fps", String(fps), "--gop", "2",
                "--quality", "custom", "--bitrate", "4500", "--min-bitrate", "4500", "--initial-bitrate", "4500",
                // Dumpable as the other publishers are, so that its smaps_rollup can be read without root.
                "--no-auto-bitrate", "--quiet", "--allow-core-dump",
            ])
        case "ffmpeg":
            return Publisher(name: name, executable: ffmpeg, arguments: [
                "-nostdin", "-loglevel", "error", "-f", "x11grab", "-framerate", String(fps), "-video_size", size,
                "-i", display, "-f", "pulse", "-i", "default", "-c:v", "libx264", "-preset", "veryfast",
                "-tune", "zerolatency", "-b:v", "4500k", "-minrate", "4500k", "-maxrate", "4500k", "-bufsize", "4500k",
                "-g", "60", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", "-f", "flv", url,
            ])
        default:
            let pipeline = "ximagesrc display-name=\(display) use-damage=false show-pointer=true "
                + "! video/x-raw,framerate=\(fps)/1 ! videoconvert ! video/x-raw,format=I420 "
                + "! x264enc tune=zerolatency speed-preset=veryfast bitrate=4500 key-int-max=60 "
                + "! h264parse ! queue ! mux. "
                + "pulsesrc ! audio/x-raw,rate=48000,channels=2 ! audioconvert ! audioresample "
                + "! voaacenc bitrate=128000 ! aacparse ! queue ! mux. "
                + "flvmux name=mux streamable=true ! rtmp2sink location=\(url)"
            return Publisher(name: name, executable: "/usr/bin/gst-launch-1.0",
                             arguments: ["-e"] + pipeline.split(separator: " ").map(String.init))
        }
    }

    /// Starts the publisher, pulls its stream back until the time code decodes, lets it settle for
    /// `warmup` seconds, then measures for `seconds`: CPU and RSS of the publisher's processes, and
    /// the frames and time codes the receiver decoded in that window. With `joinURL`, late receivers
    /// of it join afterwards while the publisher goes on (`JoinTime`).
    static func measure(_ publisher: Publisher, receiverInput: [String], receiverFirst: Bool, seconds: Double,
                        warmup: Double, logs: String, label: String, joinURL: String? = nil) throws -> Measurement {
        // An SRT receiver is the listener the publisher calls: it comes first.
        let receiverLog = "\(logs)/receiver-\(publisher.name).log"
        var early = receiverFirst ? try TimeCodeReceiver(input: receiverInput, logPath: receiverLog) : nil
        defer { early?.stop() }
        if receiverFirst { Thread.sleep(forTimeInterval: 0.5) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: publisher.executable)
        process.arguments = publisher.arguments
        process.standardInput = FileHandle.nullDevice
        let logPath = "\(logs)/\(publisher.name).log"
        try logOutput(of: process, to: logPath)
        try process.run()
        defer { stop(process) }

        // nginx-rtmp holds a player of a stream that is not published yet until it is. The receiver
        // probes 3 s of the stream (with nobuffer, the probed packets are not replayed later; with 1 s,
        // it often found only the audio); one that finds no video all the same is started again.
        func startReceiver() throws -> TimeCodeReceiver {
            if let receiver = early {
                early = nil
                return receiver
            }
            return try TimeCodeReceiver(input: receiverInput, logPath: receiverLog)
        }
        // Starting it a moment after the publisher avoids nginx's wait for a stream not yet published,
        // where a receiver was seen (once in about 15 runs) to stay without a frame; one that has had
        // no valid code for 8 s is started again, and says so on stderr.
        if !receiverFirst { Thread.sleep(forTimeInterval: 1) }
        var receiver = try startReceiver()
        var receiverStarted = Date(), receiverStarts = 1
        defer { receiver.stop() }
        let deadline = Date().addingTimeInterval(30)
        while !receiver.hasValidCode {
            guard process.isRunning else {
                throw Failure(description: "\(label): \(publisher.name) exited with \(process.terminationStatus): "
                    + tail(logPath))
            }
            guard Date() < deadline else {
                throw Failure(description: "\(label): no decodable time code in 30 s (\(receiverStarts) receivers, "
                    + "the last got \(receiver.frameCount) frames; receiver log: \(tail(receiverLog)))")
            }
            if !receiver.isRunning || Date().timeIntervalSince(receiverStarted) > 8 {
                if receiver.isRunning {
                    log("\(label): no time code after 8 s (\(receiver.frameCount) frames); receiver restarted")
                }
                receiver.stop()
                Thread.sleep(forTimeInterval: 0.5)
                receiver = try startReceiver()
                receiverStarted = Date()
                receiverStarts += 1
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: warmup)

        let pid = process.processIdentifier
        let ticksBefore = ProcessTree.cpuTicks(ProcessTree.members(pid))
        let startNs = TimeCode.nowNs()
        var peakRssKiB = 0, peakPssKiB = 0
        let endDate = Date().addingTimeInterval(seconds)
        while Date() < endDate && process.isRunning {
            let members = ProcessTree.members(pid)
            peakRssKiB = max(peakRssKiB, ProcessTree.rssKiB(members))
            peakPssKiB = max(peakPssKiB, ProcessTree.pssKiB(members))
            Thread.sleep(forTimeInterval: 0.25)
        }
        let ticksAfter = ProcessTree.cpuTicks(ProcessTree.members(pid))
        let publisherPeakRssKiB = ProcessTree.peakRssKiB(pid)
        let endNs = TimeCode.nowNs()
        guard process.isRunning else {
            throw Failure(description: "\(label): \(publisher.name) ended during the measurement: " + tail(logPath))
        }
        let elapsed = Double(endNs - startNs) / 1e9
        let samples = receiver.samples(from: startNs, to: endNs)
        let latencies = samples.compactMap(\.latencyMs).sorted()
        guard !latencies.isEmpty else { throw Failure(description: "\(label): no time code decoded while measuring") }
        let cpuPct = 100 * Double(ticksAfter - ticksBefore) / Double(sysconf(Int32(_SC_CLK_TCK))) / elapsed
        // A picture's time code, to the millisecond: receipt minus latency.
        let codes = Set(samples.compactMap { sample in
            sample.latencyMs.map { Int64((Double(sample.receiptNs) / 1e6 - $0).rounded()) }
        })
        var result = Measurement(cpuPct: cpuPct, rssMiB: Double(peakRssKiB) / 1024, pssMiB: Double(peakPssKiB) / 1024,
                                 fps: Double(samples.count) / elapsed,
                                 latencyP50Ms: percentile(latencies, 0.5), latencyP95Ms: percentile(latencies, 0.95),
                                 freshFps: Double(codes.count) / elapsed,
                                 publisherPeakRssMiB: Double(publisherPeakRssKiB) / 1024)
        log("\(label): frames=\(samples.count) with_code=\(latencies.count) cpu_pct=\(format(result.cpuPct)) "
            + "rss_mib=\(format(result.rssMiB)) pss_mib=\(format(result.pssMiB)) fps=\(format(result.fps)) "
            + "latency_ms_p50=\(format(result.latencyP50Ms)) "
            + "p95=\(format(result.latencyP95Ms)) min=\(format(latencies.first!)) max=\(format(latencies.last!))")
        if let joinURL { result.joinS = try JoinTime.measure(url: joinURL, logs: logs, label: label) }
        return result
    }

    /// The floor under every publisher: ffmpeg's x11grab of the whole screen piped as raw grey
    /// frames straight to the reader, no encoder, no server. The p50 of 5 s after 1 s.
    static func measureFloor(display: String, logs: String) throws -> Double {
        let receiver = try TimeCodeReceiver(input: [
            "-f", "x11grab", "-framerate", String(fps), "-video_size", size, "-i", display,
        ], logPath: "\(logs)/receiver-floor.log")
        defer { receiver.stop() }
        Thread.sleep(forTimeInterval: 1)
        let startNs = TimeCode.nowNs()
        Thread.sleep(forTimeInterval: 5)
        let latencies = receiver.samples(from: startNs, to: TimeCode.nowNs()).compactMap(\.latencyMs).sorted()
        guard !latencies.isEmpty else {
            throw Failure(description: "floor: no time code read from x11grab: " + tail("\(logs)/receiver-floor.log"))
        }
        return percentile(latencies, 0.5)
    }

    // MARK: Self-test: the painter, x11grab and the decoder agree, and a damaged code is refused.

    /// The self-test's result line, or why it failed. Returns (rather than exits) so that the
    /// painter, the receiver and the log directory are cleaned up on every path.
    static func selfTest(painter: String, display: String, pattern: [String]?) -> Result<String, Failure> {
        func fail(_ reason: String) -> Result<String, Failure> { .failure(Failure(description: reason)) }
        // 1. Synthetic: a painted code decodes to its value; any one wrong block, or none, is refused.
        let width = TimeCode.regionWidth, height = TimeCode.regionHeight
        let value = TimeCode.nowNs() / 1_000_000 & TimeCode.valueMask
        var grey = [UInt8](repeating: 40, count: width * height)
        TimeCode.paint(valueMs: value, into: &grey, stride: width)
        let decoded = grey.withUnsafeBytes { TimeCode.decode(grey: $0, width: width, height: height, stride: width) }
        guard decoded == value else {
            return fail("synthetic code \(value) decoded as \(decoded.map(String.init) ?? "nothing")")
        }
        for block in 0..<TimeCode.blockCount {
            var damaged = grey
            let centre = (TimeCode.originY + TimeCode.blockPx / 2) * width + TimeCode.originX + block * TimeCode.blockPx
                + TimeCode.blockPx / 2
            for dy in -8..<8 {
                for dx in -8..<8 { damaged[centre + dy * width + dx] = 255 - grey[centre + dy * width + dx] }
            }
            let misread = damaged.withUnsafeBytes {
                TimeCode.decode(grey: $0, width: width, height: height, stride: width)
            }
            if let wrong = misread {
                return fail("a code with block \(block) flipped was accepted as \(wrong)")
            }
        }
        let blank = [UInt8](repeating: 40, count: width * height)
        if blank.withUnsafeBytes({ TimeCode.decode(grey: $0, width: width, height: height, stride: width) }) != nil {
            return fail("a blank image was accepted as a code")
        }

        // 2. On the screen: the painter's code, grabbed by x11grab, decodes to a moment just before now.
        let logs = "/tmp/lpb-selftest-\(getpid())"
        mkdir(logs, 0o755)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let painterProcess: Process
        do {
            painterProcess = try startPainter(painter, display: display, geometry: "\(width + 64)x400+0+0",
                                              pattern: pattern ?? ["timecode", "1e2a3a", "ffcc00", "100", "6"])
        } catch {
            return fail("the painter did not start: \(error)")
        }
        defer { stop(painterProcess) }
        let receiver: TimeCodeReceiver
        do {
            receiver = try TimeCodeReceiver(input: [
                "-f", "x11grab", "-framerate", String(fps), "-video_size", "\(width)x\(height)", "-i", "\(display)+0,0",
            ], logPath: "\(logs)/receiver.log")
        } catch {
            return fail("ffmpeg x11grab did not start: \(error)")
        }
        defer { receiver.stop() }
        let started = Date()
        while receiver.frameCount == 0 && receiver.isRunning && Date().timeIntervalSince(started) < 5 {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let startNs = TimeCode.nowNs()
        Thread.sleep(forTimeInterval: 2)
        let samples = receiver.samples(from: startNs, to: TimeCode.nowNs())
        receiver.stop()
        let latencies = samples.compactMap(\.latencyMs).sorted()
        guard samples.count >= 20 else {
            return fail("x11grab gave \(samples.count) frames in 2 s, want at least 20: "
                + tail("\(logs)/receiver.log"))
        }
        guard !latencies.isEmpty else { return fail("none of \(samples.count) grabbed frames held a valid time code") }
        guard latencies.count * 10 >= samples.count * 9 else {
            return fail("only \(latencies.count) of \(samples.count) grabbed frames held a valid time code")
        }
        guard latencies.first! >= 0, latencies.last! <= 500 else {
            return fail("time codes \(format(latencies.first!)) to \(format(latencies.last!)) ms old, want 0 to 500")
        }
        return .success("self-test timecode synthetic=ok frames=\(samples.count) valid=\(latencies.count) "
            + "latency_ms_p50=\(format(percentile(latencies, 0.5))) latency_ms_min=\(format(latencies.first!)) "
            + "latency_ms_max=\(format(latencies.last!))")
    }

    // MARK: Helpers

    /// Sends `process`'s standard output and error to the file at `path`, emptied first (one log a run).
    static func logOutput(of process: Process, to path: String) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        process.standardOutput = log
        process.standardError = log
    }

    /// x11-paint with `pattern`; returns once it has announced its first paint. Its stdin is a pipe
    /// kept open (it ends at EOF); its stdout is read up to "ready", then left alone.
    static func startPainter(_ path: String, display: String, geometry: String, pattern: [String]) throws -> Process {
        let painter = Process()
        painter.executableURL = URL(fileURLWithPath: path)
        painter.arguments = ["--display", display, "--geometry", geometry, "--name", "livepush-bench-timecode"]
            + pattern
        painter.standardInput = Pipe()
        let output = Pipe()
        painter.standardOutput = output
        try painter.run()
        var text = ""
        let deadline = Date().addingTimeInterval(5)
        while !text.contains("\n") {
            var descriptor = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard Date() < deadline, poll(&descriptor, 1, 100) >= 0 else { break }
            if descriptor.revents != 0 {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
        }
        guard text.hasPrefix("ready") else {
            stop(painter)
            throw Failure(description: "x11-paint did not get ready (said: \(text.isEmpty ? "nothing" : text))")
        }
        return painter
    }

    /// SIGINT, up to 5 s to finish, then SIGKILL; reaped either way.
    static func stop(_ process: Process) {
        guard process.isRunning else { return }
        process.interrupt()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning {
            for pid in ProcessTree.members(process.processIdentifier).reversed() { kill(pid, SIGKILL) }
        }
        process.waitUntilExit()
    }

    static func median(_ values: [Double]) -> Double { values.isEmpty ? .nan : values.sorted()[values.count / 2] }

    /// Nearest rank of sorted values.
    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        sorted[min(sorted.count - 1, max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))]
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    static func log(_ line: String) {
        FileHandle.standardError.write(Data("push: \(line)\n".utf8))
    }

    static func tail(_ path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.isEmpty ? "(no output)" : String(text.suffix(1500))
    }
}

/// An ffmpeg child that decodes a stream (or grabs the screen) into raw grey frames, cropped to the
/// time code's region, and a thread here that reads each frame, notes CLOCK_MONOTONIC at its
/// receipt and decodes its time code. `-fps_mode passthrough` passes every decoded frame once;
/// `-enc_time_base -1` keeps the input's millisecond time base (at 1/30 s, two frames with jittered
/// timestamps could round to one tick, and the muxer dropped the second); `-flush_packets 1` writes
/// each frame as soon as it is converted; `-threads 1` keeps the rawvideo
/// encoder from frame threading, which holds every frame back by one frame period (33 ms at 30 fps).
final class TimeCodeReceiver: @unchecked Sendable {
    struct Sample {
        let receiptNs: UInt64
        /// Receipt minus the frame's time code; nil when the frame held no valid code.
        let latencyMs: Double?
    }

    private let process = Process()
    private let received = Mutex<[Sample]>([])

    init(input: [String], logPath: String) throws {
        let width = TimeCode.regionWidth, height = TimeCode.regionHeight
        process.executableURL = URL(fileURLWithPath: PushBenchmark.ffmpeg)
        process.arguments = ["-nostdin", "-loglevel", "error"] + input + [
            "-an", "-vf", "crop=\(width):\(height):0:0", "-pix_fmt", "gray", "-fps_mode", "passthrough",
            "-enc_time_base", "-1",
            "-threads", "1", "-filter_threads", "1", "-flush_packets", "1", "-f", "rawvideo", "-",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try log.seekToEnd()
        process.standardError = log
        try process.run()
        let descriptor = output.fileHandleForReading.fileDescriptor
        let thread = Thread { [self] in
            withExtendedLifetime(output) { read(descriptor, width: width, height: height) }
        }
        thread.start()
    }

    private func read(_ descriptor: Int32, width: Int, height: Int) {
        let frameBytes = width * height
        var frame = [UInt8](repeating: 0, count: frameBytes)
        while true {
            var filled = 0
            while filled < frameBytes {
                let count = frame.withUnsafeMutableBytes {
                    Glibc.read(descriptor, $0.baseAddress! + filled, frameBytes - filled)
                }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { return }
                filled += count
            }
            let receiptNs = TimeCode.nowNs()
            let code = frame.withUnsafeBytes { TimeCode.decode(grey: $0, width: width, height: height, stride: width) }
            let latencyMs = code.map { TimeCode.latencyMs(code: $0, receiptNs: receiptNs) }
            let sample = Sample(receiptNs: receiptNs, latencyMs: latencyMs)
            received.withLock { $0.append(sample) }
        }
    }

    var isRunning: Bool { process.isRunning }
    var frameCount: Int { received.withLock { $0.count } }
    var hasValidCode: Bool { received.withLock { $0.contains { $0.latencyMs != nil } } }

    /// The frames received from `startNs` to `endNs`.
    func samples(from startNs: UInt64, to endNs: UInt64) -> [Sample] {
        received.withLock { $0.filter { $0.receiptNs >= startNs && $0.receiptNs <= endNs } }
    }

    func stop() { PushBenchmark.stop(process) }
}

/// A process and its descendants, from /proc: CPU time and resident memory.
enum ProcessTree {
    /// `root` and every process descended from it (parents before children).
    static func members(_ root: Int32) -> [Int32] {
        var parentOf: [Int32: Int32] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let fields = statFields(pid), fields.count > 1,
                  let parent = Int32(fields[1]) else { continue }
            parentOf[pid] = parent
        }
        var members = [root], index = 0
        while index < members.count {
            let parent = members[index]
            members += parentOf.filter { $0.value == parent }.map(\.key).sorted()
            index += 1
        }
        return members
    }

    /// utime + stime of the processes, in clock ticks.
    static func cpuTicks(_ pids: [Int32]) -> Int {
        pids.reduce(0) { total, pid in
            guard let fields = statFields(pid), fields.count > 12 else { return total }
            return total + (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        }
    }

    /// VmRSS of the processes together, in KiB.
    static func rssKiB(_ pids: [Int32]) -> Int { pids.reduce(0) { $0 + RecordBenchmark.rssKiB($1) } }

    /// The proportional set sizes of the processes together, in KiB (`Pss:` of /proc/PID/smaps_rollup):
    /// a page shared by n processes counts 1/n in each, so the ring the helper and the pusher share
    /// (and the X server maps) is counted once over them all.
    static func pssKiB(_ pids: [Int32]) -> Int {
        pids.reduce(0) { total, pid in
            let rollup = (try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8)) ?? ""
            guard let line = rollup.split(separator: "\n").first(where: { $0.hasPrefix("Pss:") }) else { return total }
            return total + (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0)
        }
    }

    /// The fields of /proc/PID/stat after the command name: state first, then ppid, ...
    private static func statFields(_ pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: end)...].split(separator: " ")
    }
}
