import CaptureLink
import CommandLineSupport
import Foundation
import LinuxSystem
import Synchronization

/// The Capture Link transport benchmark: frames from a helper process to a consumer here.
enum LinkBenchmark {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "Length of each case (default 10)."),
        .value("runs", valueName: "N", help: "Runs of each case; the median is printed (default 1)."),
        .value("sizes", valueName: "WxH,...", help: "Frame sizes (default 1920x1080,3840x2160)."),
        .value("modes", valueName: "MODE,...", help: "60fps and/or max (default 60fps,max)."),
        .value("consumer", valueName: "read|hold", help: "read every cache line (default) or only hold each frame."),
    ]

    struct Result {
        var fps: Double
        var handoffP50Us: Double
        var handoffP99Us: Double
        var drops: Int
        var helperCpuPct: Double
        var pusherCpuPct: Double
        var socketBytesPerFrame: Double
    }

    static func main(_ arguments: [String]) -> Never {
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "link")
        let seconds = parsed.seconds(default: 10), runs = parsed.runs(default: 1)
        let sizes = (parsed.value("sizes") ?? "1920x1080,3840x2160").split(separator: ",").compactMap { text in
            let parts = text.split(separator: "x").compactMap { UInt32($0) }
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }
        let modes = (parsed.value("modes") ?? "60fps,max").split(separator: ",").map(String.init)
        let readsPixels = parsed.value("consumer") != "hold"
        var floors: [(p50: Double, p99: Double)] = []
        for _ in 0..<runs {
            guard let delays = try? WakeFloor.measureUs(seconds: seconds).sorted(), !delays.isEmpty else { continue }
            floors.append((delays[delays.count / 2], delays[min(delays.count - 1, delays.count * 99 / 100)]))
        }
        if !floors.isEmpty {
            print(String(format: "link-floor wake_p50_us=%.0f wake_p99_us=%.0f", floors.map(\.p50).sorted()[floors.count / 2],
                         floors.map(\.p99).sorted()[floors.count / 2]))
        }
        for (width, height) in sizes {
            for mode in modes {
                var results: [Result] = []
                for _ in 0..<runs {
                    do {
                        results.append(try runCase(width: width, height: height, mode: mode, seconds: seconds,
                                                   readsPixels: readsPixels))
                    } catch {
                        Terminal.printError("livepush-bench link \(width)x\(height) \(mode): \(error)")
                        Terminal.exit(.failure)
                    }
                }
                func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
                let fps = median(results.map(\.fps))
                print(String(format: "link %dx%d mode=%@ fps=%.1f handoff_p50_us=%.0f handoff_p99_us=%.0f drops=%d "
                    + "helper_cpu_pct=%.1f pusher_cpu_pct=%.1f", width, height, mode, fps,
                    median(results.map(\.handoffP50Us)), median(results.map(\.handoffP99Us)),
                    Int(median(results.map { Double($0.drops) })), median(results.map(\.helperCpuPct)),
                    median(results.map(\.pusherCpuPct))))
                print(String(format: "link-copies %dx%d mode=%@ frame_bytes=%d socket_bytes_per_frame=%.0f",
                             width, height, mode, Int(width * height * 4), median(results.map(\.socketBytesPerFrame))))
                fflush(nil)
            }
        }
        Terminal.exit(.success)
    }

    struct BenchmarkError: Error, CustomStringConvertible {
        let description: String
    }

    /// What the consumer measured, on the link thread.
    final class Consumer: @unchecked Sendable {
        var handoffNs: [UInt64] = []
        var frames = 0
        var checksum: UInt64 = 0
        let lock = NSLock()
    }

    static func runCase(width: UInt32, height: UInt32, mode: String, seconds: Double, readsPixels: Bool) throws
        -> Result
    {
        let runtime = "/tmp/lpb-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(runtime, 0o700)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let group = "bench"
        let consumer = Consumer()
        consumer.handoffNs.reserveCapacity(Int(seconds * 2000))
        let endpointBox = Mutex<PusherEndpoint?>(nil)
        var configuration = PusherEndpointConfiguration(group: group)
        configuration.runtimeDirectory = runtime
        configuration.maxWidth = width
        configuration.maxHeight = height
        configuration.fps = 60
        let done = DispatchSemaphore(value: 0)
        let endpoint = try PusherEndpoint(configuration: configuration) { event in
            switch event {
            case .frame:
                guard let frame = endpointBox.withLock({ $0 })?.acquireLatestFrame() else { return }
                let heldNs = MonotonicClock.nowNs()
                // Read every cache line of the frame, as a converter would.
                let sum = !readsPixels ? 0 : frame.withPlanes { planes -> UInt64 in
                    var sum: UInt64 = 0
                    let plane = planes[0]
                    var offset = 0
                    while offset + 8 <= plane.count {
                        sum &+= plane.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                        offset += 64
                    }
                    return sum
                }
                frame.release()
                consumer.lock.lock()
                consumer.handoffNs.append(heldNs &- frame.info.ptsNs)
                consumer.frames += 1
                consumer.checksum &+= sum
                consumer.lock.unlock()
            case .finished, .lost, .violation:
                done.signal()
            default:
                break
            }
        }
        endpointBox.withLock { $0 = endpoint }
        defer { endpoint.stop() }

        var usageBefore = rusage(), childUsageBefore = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usageBefore)
        getrusage(RUSAGE_CHILDREN.rawValue, &childUsageBefore)
        let started = MonotonicClock.nowNs()

        let helper = Process()
        helper.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        helper.arguments = ["link-helper", "--group", group, "--runtime", runtime, "--size", "\(width)x\(height)",
                            "--mode", mode, "--seconds", String(seconds)]
        let output = Pipe()
        helper.standardOutput = output
        try helper.run()
        let helperOutput = output.fileHandleForReading.readDataToEndOfFile()
        helper.waitUntilExit()
        _ = done.wait(timeout: .now() + 5)
        let elapsedS = Double(MonotonicClock.nowNs() - started) / 1e9
        var usageAfter = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usageAfter)
        var childUsage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &childUsage)

        guard helper.terminationStatus == 0 else {
            throw BenchmarkError(description: "helper exited with \(helper.terminationStatus)")
        }
        // The helper prints: published=N dropped=N elapsed_s=S socket_bytes=N
        let fields = KeyValueFields.parse(String(decoding: helperOutput, as: UTF8.self))
        let helperSeconds = fields["elapsed_s"] ?? seconds
        consumer.lock.lock()
        let latencies = consumer.handoffNs.sorted()
        let frames = consumer.frames
        consumer.lock.unlock()
        guard !latencies.isEmpty else { throw BenchmarkError(description: "no frame arrived") }
        func percentileUs(_ p: Double) -> Double {
            Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1000
        }
        let pusherCpuS = cpuSeconds(usageAfter) - cpuSeconds(usageBefore)
        let helperCpuS = cpuSeconds(childUsage) - cpuSeconds(childUsageBefore)
        return Result(
            fps: Double(frames) / helperSeconds,
            handoffP50Us: percentileUs(0.50), handoffP99Us: percentileUs(0.99),
            drops: Int(fields["dropped"] ?? 0),
            helperCpuPct: 100 * helperCpuS / helperSeconds, pusherCpuPct: 100 * pusherCpuS / elapsedS,
            socketBytesPerFrame: (fields["socket_bytes"] ?? 0) / Double(max(1, frames)))
    }

    static func cpuSeconds(_ usage: rusage) -> Double {
        Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }
}

/// `key=value` pairs in a line of output, as the helpers' summaries print them.
enum KeyValueFields {
    static func parse(_ text: String) -> [String: Double] {
        Dictionary(text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { pair -> (String, Double)? in
            let parts = pair.split(separator: "=")
            guard parts.count == 2, let value = Double(parts[1]) else { return nil }
            return (String(parts[0]), value)
        }, uniquingKeysWith: { $1 })
    }
}
