import CaptureLink
import CommandLineSupport
import Foundation
import LinuxSystem
import Synchronization

/// Camera capture (issue 32): a 1280x720 30 fps camera on the environment's PipeWire
/// (tools/testclients/pw-camera-source.c, offering YUY2 and MJPEG, with colour bars, a moving column and
/// its send time stamped in the pixels) taken in turn, in each format, by `livepush-capture --source
/// camera` (into a pusher endpoint here, which reads the stamp of every frame it is handed) and by
/// GStreamer doing the same work into BGRx (`pipewiresrc ! [jpegdec !] videoconvert`), in one run.
enum CameraBenchmark {
    static let options: [OptionSpec] = [
        .value("producer", valueName: "PATH", help: "The compiled tools/testclients/pw-camera-source.c (required)."),
        .value("seconds", valueName: "N", help: "Length of each measurement (default 10)."),
        .value("runs", valueName: "N", help: "Runs of each case, alternated; the median is printed (default 1)."),
    ]

    struct Failure: Error, CustomStringConvertible { let description: String }

    static let width = 1280, height = 720

    struct Figures {
        var fps: Double
        var cpuPct: Double
        var latencyP50Ms: Double
    }

    static func main(_ arguments: [String]) -> Never {
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "camera")
        guard let producerPath = parsed.value("producer") else {
            Terminal.printError("livepush-bench camera: missing --producer PATH")
            Terminal.exit(.usage)
        }
        let seconds = parsed.seconds(default: 10)
        let runs = parsed.runs(default: 1)
        do {
            let name = "livepush-bench-camera-\(getpid())"
            let producer = try PipeWireBenchmark.startProducer(producerPath, name: name, arguments: [
                "--modes", "YUY2:\(width)x\(height)@30,MJPEG:\(width)x\(height)@30", "--bars", "--moving", "--stamp",
            ])
            defer {
                producer.terminate()
                producer.waitUntilExit()
            }
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            for format in ["yuy2", "mjpeg"] {
                var ours: [Figures] = [], gst: [Figures] = []
                for _ in 0..<runs {
                    ours.append(try measureHelper(camera: name, format: format, seconds: seconds))
                    gst.append(try measureGStreamer(camera: name, format: format, seconds: seconds))
                }
                let lines = [("capture", ours), ("gst", gst)].map { label, figures in
                    String(format: "%@ camera format=%@ 720p30 cpu_pct=%.1f latency_ms_p50=%.1f fps=%.1f", label, format,
                           median(figures.map(\.cpuPct)), median(figures.map(\.latencyP50Ms)), median(figures.map(\.fps)))
                }
                lines.forEach { print($0) }
                print(String(format: "camera ratios format=%@ cpu_vs_gst=%.2f latency_p50_vs_gst=%.2f", format,
                             median(ours.map(\.cpuPct)) / max(0.01, median(gst.map(\.cpuPct))),
                             median(ours.map(\.latencyP50Ms)) / max(0.01, median(gst.map(\.latencyP50Ms)))))
                fflush(nil)
            }
        } catch {
            Terminal.printError("livepush-bench camera: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    /// The producer's send time (CLOCK_MONOTONIC ms, modulo 2^32) read back from a BGRx picture: 32
    /// blocks of 16x16 along the top edge, white 1, black 0; nil when a block is neither (not a
    /// stamped picture, or one that arrived damaged).
    static func stampMs(_ pixels: UnsafeRawBufferPointer, strideBytes: Int) -> UInt32? {
        guard pixels.count >= 8 * strideBytes + 512 * 4 else { return nil }
        var value: UInt32 = 0
        for bit in 0..<32 {
            let green = pixels[8 * strideBytes + (bit * 16 + 8) * 4 + 1]
            guard green < 64 || green > 192 else { return nil }
            value = value << 1 | (green > 192 ? 1 : 0)
        }
        return value
    }

    /// How long ago (ms) a picture stamped `stamp` was drawn, or nil when the stamp is implausible.
    static func ageMs(_ stamp: UInt32) -> Double? {
        let now = UInt32(truncatingIfNeeded: MonotonicClock.nowNs() / 1_000_000)
        let age = now &- stamp
        return age < 5000 ? Double(age) : nil
    }

    private final class Ages: Sendable {
        let values = Mutex<[Double]>([])
        func add(_ age: Double) { values.withLock { $0.append(age) } }
        func reset() { values.withLock { $0 = [] } }
        var median: Double { values.withLock { $0.isEmpty ? 0 : $0.sorted()[$0.count / 2] } }
    }

    /// livepush-capture on the camera into an endpoint here that reads each frame's stamp as it is handed it.
    static func measureHelper(camera: String, format: String, seconds: Double) throws -> Figures {
        let ages = Ages()
        let consumer = try CountingEndpoint(group: "camera") { frame in
            guard frame.info.format == .bgrx else { return }
            frame.withPlanes { planes in
                if let stamp = stampMs(planes[0], strideBytes: frame.info.strides[0]), let age = ageMs(stamp) {
                    ages.add(age)
                }
            }
        }
        defer { consumer.stop() }
        let run = try PipeWireBenchmark.runHelper(
            ["--group", "camera", "--source", "camera", "--camera", camera, "--camera-format", format,
             "--size", "\(width)x\(height)", "--fps", "30", "--stats"],
            into: consumer, seconds: seconds, settled: ages.reset)
        guard KeyValueFields.parse(run.stderr)["copy_ms_p50"] != nil, run.frames > 0 else {
            throw Failure(description: "livepush-capture sent \(run.frames) frames and printed no stats: \(run.stderr)")
        }
        return Figures(fps: Double(run.frames) / run.elapsedSeconds, cpuPct: run.cpuPct, latencyP50Ms: ages.median)
    }

    /// GStreamer's pipeline for `format` into BGRx, ending in `sink`.
    static func gstArguments(camera: String, format: String, sink: [String]) -> [String] {
        let caps = format == "mjpeg" ? ["image/jpeg,width=\(width),height=\(height),framerate=30/1", "!", "jpegdec"]
            : ["video/x-raw,format=YUY2,width=\(width),height=\(height),framerate=30/1"]
        return ["-q", "pipewiresrc", "target-object=\(camera)", "!"] + caps
            + ["!", "videoconvert", "!", "video/x-raw,format=BGRx", "!"] + sink
    }

    /// GStreamer doing the same: its CPU with `fakesink` (nothing handed on: its floor), then, in a
    /// second pipeline, the age of each picture it writes to a pipe (`fdsink`), read here.
    static func measureGStreamer(camera: String, format: String, seconds: Double) throws -> Figures {
        let environment = ProcessInfo.processInfo.environment.merging(
            ["PIPEWIRE_REMOTE": PipeWireBenchmark.daemonSocket()]) { $1 }
        let cpu = Process()
        cpu.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        cpu.arguments = gstArguments(camera: camera, format: format, sink: ["fakesink"])
        cpu.environment = environment
        cpu.standardOutput = FileHandle.nullDevice
        cpu.standardError = FileHandle.nullDevice
        let cpuPct = try BenchSupport.cpuPercent(running: cpu, seconds: seconds + 1).cpuPct

        // The pictures' ages, read from the pipe; a pipeline that gives nothing within 10 s (seen now and
        // then: pipewiresrc stuck negotiating MJPEG after the helper's stream) is started once more.
        for attempt in 1...2 {
            if let measured = try measureGStreamerLatency(camera: camera, format: format, seconds: seconds,
                                                          environment: environment)
            {
                return Figures(fps: measured.fps, cpuPct: cpuPct, latencyP50Ms: measured.latencyP50Ms)
            }
            FileHandle.standardError.write(Data("livepush-bench camera: GStreamer gave no picture in 10 s (attempt \(attempt))\n".utf8))
        }
        throw Failure(description: "GStreamer's \(format) pipeline gave no stamped picture twice")
    }

    /// One `fdsink` pipeline: the median age of the pictures it wrote over `seconds` after 1 s, and
    /// its rate; nil when it wrote nothing within 10 s.
    static func measureGStreamerLatency(camera: String, format: String, seconds: Double,
                                        environment: [String: String]) throws -> (fps: Double, latencyP50Ms: Double)?
    {
        let timed = Process()
        timed.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        timed.arguments = gstArguments(camera: camera, format: format, sink: ["fdsink", "fd=1"])
        timed.environment = environment
        let output = Pipe()
        timed.standardOutput = output
        timed.standardError = FileHandle.nullDevice
        try timed.run()
        defer {
            timed.terminate()
            timed.waitUntilExit()
        }
        // Whole pictures read into one buffer with read(2) after poll(2): the reader must keep up, or the
        // pipe's back-pressure would count as GStreamer's latency; a silent pipeline must not hang it.
        let frameBytes = width * height * 4
        let picture = UnsafeMutableRawBufferPointer.allocate(byteCount: frameBytes, alignment: 64)
        defer { picture.deallocate() }
        let descriptor = output.fileHandleForReading.fileDescriptor
        var ages: [Double] = []
        var frames = 0, filled = 0
        let started = Date()
        var firstPicture: Date?, measuring: Date?
        while true {
            let now = Date()
            if firstPicture == nil && now.timeIntervalSince(started) >= 10 { return nil }
            if let since = measuring, now.timeIntervalSince(since) >= seconds { break }
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 200) > 0 else { continue }
            let count = read(descriptor, picture.baseAddress! + filled, frameBytes - filled)
            if count <= 0 { break }
            filled += count
            guard filled == frameBytes else { continue }
            filled = 0
            if measuring != nil {
                frames += 1
                if let age = stampMs(UnsafeRawBufferPointer(picture), strideBytes: width * 4).flatMap(ageMs) {
                    ages.append(age)
                }
            } else if let first = firstPicture {
                if Date().timeIntervalSince(first) >= 1 { measuring = Date() }  // 1 s to settle
            } else {
                firstPicture = Date()
            }
        }
        guard let since = measuring, !ages.isEmpty else { return nil }
        return (Double(frames) / Date().timeIntervalSince(since), ages.sorted()[ages.count / 2])
    }
}
