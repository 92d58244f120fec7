import CaptureLink
import Foundation
import Media
import Synchronization

/// Adaptive resolution's cost at the source (issue 16c): livepush-capture asked with CONFIG for
/// a smaller size, scaling on the X server (`--scale render`) or with libyuv (`--scale yuv`),
/// against the helper sending full frames that the pusher scales (`--scale crop`: no
/// LPC_CAP_SCALE, so the pusher keeps WELCOME's maximum). In each case this process plays the
/// pusher: its endpoint converts every frame to I420 at the small size, as the video pipeline
/// does, and its CPU is `pusher_cpu_pct`; the X server's own CPU is `xserver_cpu_pct`.
enum CaptureScaleBenchmark {
    struct Figures {
        var fps = 0.0
        var helperCpuPct = 0.0
        var pusherCpuPct = 0.0
        var xserverCpuPct = 0.0
        var width = 0
        var height = 0
    }

    /// One line per method, the median of `runs`.
    static func printLines(xvfb: PrivateXvfb, size: String, to small: (width: Int, height: Int), fps: Int,
                           seconds: Double, runs: Int) throws {
        for method in ["render", "yuv", "crop"] {
            var all: [Figures] = []
            for _ in 0..<runs {
                all.append(try measure(xvfb: xvfb, method: method, to: small, fps: fps, seconds: seconds))
            }
            func median(_ value: (Figures) -> Double) -> Double { all.map(value).sorted()[all.count / 2] }
            let frames = all[all.count / 2]
            let name = method == "crop" ? "pusher" : method
            print(String(format: "capture x11 scale %@->%dx%d method=%@ frames=%dx%d fps=%.1f helper_cpu_pct=%.1f "
                + "pusher_cpu_pct=%.1f xserver_cpu_pct=%.1f", size, small.width, small.height, name, frames.width,
                frames.height, median(\.fps), median(\.helperCpuPct), median(\.pusherCpuPct), median(\.xserverCpuPct)))
            fflush(nil)
        }
    }

    static func measure(xvfb: PrivateXvfb, method: String, to small: (width: Int, height: Int), fps: Int,
                        seconds: Double) throws -> Figures {
        let runtime = "/tmp/lpb-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(runtime, 0o700)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let frames = Atomic<Int>(0)
        let lastSize = Mutex((width: 0, height: 0))
        let box = Mutex<PusherEndpoint?>(nil)
        // Used on the endpoint's link thread only, one frame at a time.
        nonisolated(unsafe) let output = try VideoFrame(width: small.width, height: small.height)
        nonisolated(unsafe) let converter = FrameConverter()
        var configuration = PusherEndpointConfiguration(group: "scale")
        configuration.runtimeDirectory = runtime
        configuration.fps = UInt32(fps)
        let endpoint = try PusherEndpoint(configuration: configuration) { event in
            guard case .frame = event, let frame = box.withLock({ $0 })?.acquireLatestFrame() else { return }
            defer { frame.release() }
            let info = frame.info
            try? frame.withPlanes { planes in
                try converter.convert(SourcePicture(format: .bgrx, width: info.width, height: info.height,
                                                    planes: planes, strides: info.strides),
                                      into: output)
            }
            lastSize.withLock { $0 = (info.width, info.height) }
            frames.add(1, ordering: .relaxed)
        }
        box.withLock { $0 = endpoint }
        defer { endpoint.stop() }
        endpoint.requestMaxSize(width: UInt32(small.width), height: UInt32(small.height))
        let helper = Process()
        helper.executableURL = BenchSupport.sibling("livepush-capture")
        helper.arguments = ["--group", "scale", "--display", xvfb.display, "--fps", String(fps), "--scale", method]
        helper.environment = ProcessInfo.processInfo.environment.merging(["XDG_RUNTIME_DIR": runtime]) { $1 }
        helper.standardError = FileHandle.nullDevice
        try helper.run()
        Thread.sleep(forTimeInterval: 1)  // connect, CONFIG, settle
        var selfBefore = rusage()
        getrusage(RUSAGE_SELF.rawValue, &selfBefore)
        let helperTicksBefore = processTicks(helper.processIdentifier)
        let serverTicksBefore = processTicks(xvfb.pid)
        let startFrames = frames.load(ordering: .relaxed)
        let started = Date()
        Thread.sleep(forTimeInterval: seconds)
        let counted = frames.load(ordering: .relaxed) - startFrames
        let elapsed = Date().timeIntervalSince(started)
        let helperTicks = processTicks(helper.processIdentifier) - helperTicksBefore
        let serverTicks = processTicks(xvfb.pid) - serverTicksBefore
        var selfAfter = rusage()
        getrusage(RUSAGE_SELF.rawValue, &selfAfter)
        helper.interrupt()
        helper.waitUntilExit()
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        var figures = Figures()
        figures.fps = Double(counted) / elapsed
        figures.helperCpuPct = 100 * Double(helperTicks) / ticksPerSecond / elapsed
        figures.xserverCpuPct = 100 * Double(serverTicks) / ticksPerSecond / elapsed
        figures.pusherCpuPct = 100 * (LinkBenchmark.cpuSeconds(selfAfter) - LinkBenchmark.cpuSeconds(selfBefore)) / elapsed
        (figures.width, figures.height) = lastSize.withLock { $0 }
        return figures
    }

    /// utime + stime of a running process, in clock ticks (/proc/PID/stat fields 14 and 15).
    static func processTicks(_ pid: Int32) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: end)...].split(separator: " ")
        // fields[0] is field 3 (state): utime is field 14, stime 15.
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return user + system
    }
}
