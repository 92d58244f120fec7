import CaptureLink
import CommandLineSupport
import Foundation
import ScreenCapture
import Synchronization

/// X11 capture: livepush-capture into a pusher endpoint here, next to the floor (a bare
/// xcb_shm_get_image loop) and ffmpeg's x11grab on the same private Xvfb, in one run.
enum CaptureBenchmark {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "Length of each measurement (default 10)."),
        .value("runs", valueName: "N", help: "Runs of each case; the median is printed (default 1)."),
        .value("sizes", valueName: "WxH,...", help: "Xvfb screen sizes (default 1920x1080,3840x2160)."),
        .value("fps", valueName: "N", help: "Frame rate asked of both capturers (default 30)."),
    ]

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func main(_ arguments: [String]) -> Never {
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "capture")
        let seconds = parsed.seconds(default: 10), runs = parsed.runs(default: 1)
        let fps = Int(parsed.value("fps") ?? "30") ?? 30
        let sizes = (parsed.value("sizes") ?? "1920x1080,3840x2160").split(separator: ",").map(String.init)
        for size in sizes {
            do {
                let xvfb = try PrivateXvfb(size: size)
                defer { xvfb.stop() }
                func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
                var capture: [(fps: Double, p50: Double, p99: Double, cpu: Double)] = []
                var floor: [Double] = [], ffmpeg: [Double] = []
                for _ in 0..<runs {
                    capture.append(try measureHelper(display: xvfb.display, fps: fps, seconds: seconds))
                    // The floor is paced like the capture, so that both grab from an X server woken
                    // once a frame (back to back, a grab is about half as long: caches stay hot).
                    floor.append(median(try X11GrabFloor.measureMs(displayName: xvfb.display, count: 3 * fps,
                                                                   intervalMs: 1000 / Double(fps))))
                    ffmpeg.append(try measureFFmpeg(display: xvfb.display, size: size, fps: fps, seconds: seconds))
                }
                print(String(format: "capture x11 %@ fps_target=%d fps=%.1f grab_ms_p50=%.2f grab_ms_p99=%.2f "
                    + "helper_cpu_pct=%.1f", size, fps, median(capture.map(\.fps)), median(capture.map(\.p50)),
                    median(capture.map(\.p99)), median(capture.map(\.cpu))))
                print(String(format: "floor x11 %@ get_image_ms_p50=%.2f", size, median(floor)))
                print(String(format: "ffmpeg x11grab %@ cpu_pct=%.1f", size, median(ffmpeg)))
                fflush(nil)
                // Adaptive resolution's first step, 1080p -> 720p (CaptureScaleBenchmark.swift); at 1080p only,
                // to keep `make bench` short.
                if size == "1920x1080" {
                    try CaptureScaleBenchmark.printLines(xvfb: xvfb, size: size, to: (1280, 720), fps: fps,
                                                         seconds: seconds, runs: runs)
                }
            } catch {
                Terminal.printError("livepush-bench capture \(size): \(error)")
                Terminal.exit(.failure)
            }
        }
        Terminal.exit(.success)
    }

    /// livepush-capture at `fps` into an endpoint whose consumer borrows and releases each frame.
    static func measureHelper(display: String, fps: Int, seconds: Double) throws
        -> (fps: Double, p50: Double, p99: Double, cpu: Double)
    {
        let runtime = "/tmp/lpb-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(runtime, 0o700)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let frames = Atomic<Int>(0)
        let box = Mutex<PusherEndpoint?>(nil)
        var configuration = PusherEndpointConfiguration(group: "capture")
        configuration.runtimeDirectory = runtime
        configuration.fps = UInt32(fps)
        let endpoint = try PusherEndpoint(configuration: configuration) { event in
            if case .frame = event {
                box.withLock { $0 }?.acquireLatestFrame()?.release()
                frames.add(1, ordering: .relaxed)
            }
        }
        box.withLock { $0 = endpoint }
        defer { endpoint.stop() }
        let helper = Process()
        helper.executableURL = BenchSupport.sibling("livepush-capture")
        helper.arguments = ["--group", "capture", "--display", display, "--fps", String(fps), "--stats"]
        helper.environment = ProcessInfo.processInfo.environment.merging(["XDG_RUNTIME_DIR": runtime]) { $1 }
        let errors = Pipe()
        helper.standardError = errors
        var before = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &before)
        try helper.run()
        Thread.sleep(forTimeInterval: 1)  // connect and settle
        let startFrames = frames.load(ordering: .relaxed)
        let started = Date()
        Thread.sleep(forTimeInterval: seconds)
        let counted = frames.load(ordering: .relaxed) - startFrames
        let elapsed = Date().timeIntervalSince(started)
        helper.interrupt()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        helper.waitUntilExit()
        var after = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &after)
        let fields = KeyValueFields.parse(stderr)
        guard let p50 = fields["grab_ms_p50"], let p99 = fields["grab_ms_p99"] else {
            throw Failure(description: "livepush-capture printed no stats: \(stderr)")
        }
        let cpuSeconds = LinkBenchmark.cpuSeconds(after) - LinkBenchmark.cpuSeconds(before)
        // The helper ran about `seconds` + 1 s of settling; its CPU is averaged over that.
        return (Double(counted) / elapsed, p50, p99, 100 * cpuSeconds / (seconds + 1))
    }

    /// CPU of `ffmpeg -f x11grab ... -f null -` at the same size and rate.
    static func measureFFmpeg(display: String, size: String, fps: Int, seconds: Double) throws -> Double {
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-nostdin", "-loglevel", "fatal", "-f", "x11grab", "-framerate", String(fps),
                            "-video_size", size, "-i", display, "-t", String(seconds), "-f", "null", "-"]
        let (cpuPct, status) = try BenchSupport.cpuPercent(running: ffmpeg, seconds: nil)
        guard status == 0 else { throw Failure(description: "ffmpeg x11grab failed") }
        return cpuPct
    }
}

/// An Xvfb of the benchmark's own, at the size asked, with MIT-SHM.
final class PrivateXvfb {
    let display: String
    private let process = Process()
    var pid: Int32 { process.processIdentifier }

    init(size: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
        process.arguments = ["-displayfd", "1", "-screen", "0", "\(size)x24", "+extension", "MIT-SHM", "-nolisten", "tcp"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var number = Data()
        while !number.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw CaptureBenchmark.Failure(description: "Xvfb did not start") }
            number.append(chunk)
        }
        display = ":" + String(decoding: number, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
