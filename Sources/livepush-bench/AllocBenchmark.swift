import CommandLineSupport
import Foundation

/// Heap allocations in steady state (issue 22 item 6): `livepush push` (the push benchmark's `e2e`
/// publisher: 1080p30, x264 CBR 4500 kbps, the mic) runs with the alloc-count shim preloaded
/// (tools/testclients/alloc-count.c), which counts every malloc, calloc, realloc and aligned
/// allocation of each process into a file mapped shared. After the receiver at nginx decoded a
/// valid time code and `--warmup` seconds more, the counters are read, then again `--seconds` later:
///
///     alloc push 1080p30 allocs_per_s=<n> bytes_per_s=<n> frees_per_s=<n> fps=<n>
///     alloc capture 1080p30 allocs_per_s=<n> bytes_per_s=<n>
///
/// The first line is the pusher, the second its `livepush-capture` helper; `fps` is what the receiver
/// decoded in the window (the push really ran). Medians of `--runs`.
enum AllocBenchmark {
    static let options: [OptionSpec] = [
        .value("painter", valueName: "PATH", help: "The x11-paint test client (tools/testclients/x11-paint.c, built)."),
        .value("shim", valueName: "PATH", help: "The alloc-count shim (tools/testclients/alloc-count.c, built .so)."),
        .value("seconds", valueName: "N", help: "Counted window (default 10)."),
        .value("warmup", valueName: "N", help: "Seconds after the first decoded code before counting (default 5)."),
        .value("runs", valueName: "N", help: "Runs; the median is printed (default 1)."),
        .value("display", valueName: ":N", help: "X display (default $LIVEPUSH_TEST_DISPLAY, else $DISPLAY)."),
        .value("rtmp", valueName: "URL", help: "rtmp://127.0.0.1:PORT (default $LIVEPUSH_TEST_RTMP_URL)."),
    ]

    /// One process's counters, as the shim writes them.
    struct Counts {
        var allocations: UInt64
        var bytes: UInt64
        var frees: UInt64
    }

    struct Rates {
        var pusherAllocsPerS: Double
        var pusherBytesPerS: Double
        var pusherFreesPerS: Double
        var helperAllocsPerS: Double
        var helperBytesPerS: Double
        var fps: Double
    }

    static func main(_ arguments: [String]) -> Never {
        BenchSupport.unblockAllSignals()
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "alloc")
        guard let painter = parsed.value("painter"), let shim = parsed.value("shim"),
              let display = BenchSupport.display(parsed), let rtmp = BenchSupport.rtmp(parsed)
        else {
            Terminal.printError("livepush-bench alloc: --painter PATH, --shim PATH, a display and an RTMP server "
                + "(run inside tools/testenv run --screen 1920x1080 -- ...) are required")
            Terminal.exit(.usage)
        }
        guard FileManager.default.isReadableFile(atPath: shim) else {
            Terminal.printError("livepush-bench alloc: no shim at \(shim): build it with cc -std=gnu11 -O2 -shared "
                + "-fPIC tools/testclients/alloc-count.c -o \(shim)")
            Terminal.exit(.usage)
        }
        let seconds = parsed.seconds(default: 10), warmup = parsed.seconds("warmup", default: 5)
        let runs = parsed.runs(default: 1)
        let logs = "/tmp/lpb-alloc-\(getpid())"
        mkdir(logs, 0o755)
        do {
            let painterProcess = try PushBenchmark.startPainter(
                painter, display: display, geometry: "\(PushBenchmark.size)+0+0",
                pattern: ["timecode", "1e2a3a", "ffcc00", "240", "6"])
            defer { PushBenchmark.stop(painterProcess) }
            var all: [Rates] = []
            for run in 1...runs {
                let key = "bench-alloc-\(getpid())-\(run)"
                let rates = try measure(url: "\(rtmp)/live/\(key)", display: display, shim: shim,
                                        countDirectory: "\(logs)/counts-\(run)", seconds: seconds, warmup: warmup,
                                        logs: logs, label: "run \(run)/\(runs)")
                all.append(rates)
            }
            let median = PushBenchmark.median
            print(String(format: "alloc push 1080p30 allocs_per_s=%.0f bytes_per_s=%.0f frees_per_s=%.0f fps=%.1f",
                         median(all.map(\.pusherAllocsPerS)), median(all.map(\.pusherBytesPerS)),
                         median(all.map(\.pusherFreesPerS)), median(all.map(\.fps))))
            print(String(format: "alloc capture 1080p30 allocs_per_s=%.0f bytes_per_s=%.0f",
                         median(all.map(\.helperAllocsPerS)), median(all.map(\.helperBytesPerS))))
            try? FileManager.default.removeItem(atPath: logs)
        } catch {
            Terminal.printError("livepush-bench alloc: \(error)\n(logs kept in \(logs))")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    static func measure(url: String, display: String, shim: String, countDirectory: String, seconds: Double,
                        warmup: Double, logs: String, label: String) throws -> Rates {
        mkdir(countDirectory, 0o755)
        let publisher = PushBenchmark.makePublisher("e2e", display: display, url: url)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: publisher.executable)
        process.arguments = publisher.arguments
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = shim
        environment["LIVEPUSH_ALLOC_COUNT_DIR"] = countDirectory
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        let logPath = "\(logs)/e2e-alloc.log"
        try PushBenchmark.logOutput(of: process, to: logPath)
        try process.run()
        defer { PushBenchmark.stop(process) }
        Thread.sleep(forTimeInterval: 1)
        let receiverLog = "\(logs)/receiver-alloc.log"
        var receiver = try TimeCodeReceiver(input: PushBenchmark.receiverInput(url), logPath: receiverLog)
        defer { receiver.stop() }
        var receiverStarted = Date()
        let deadline = Date().addingTimeInterval(30)
        while !receiver.hasValidCode {
            guard process.isRunning else {
                throw PushBenchmark.Failure(description: "\(label): livepush exited with \(process.terminationStatus): "
                    + PushBenchmark.tail(logPath))
            }
            guard Date() < deadline else {
                throw PushBenchmark.Failure(description: "\(label): no decodable time code in 30 s: "
                    + PushBenchmark.tail(receiverLog))
            }
            if !receiver.isRunning || Date().timeIntervalSince(receiverStarted) > 8 {
                receiver.stop()
                receiver = try TimeCodeReceiver(input: PushBenchmark.receiverInput(url), logPath: receiverLog)
                receiverStarted = Date()
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: warmup)
        let pusher = process.processIdentifier
        guard let helper = ProcessTree.members(pusher).dropFirst().first else {
            throw PushBenchmark.Failure(description: "\(label): livepush has no livepush-capture child")
        }
        let startNs = TimeCode.nowNs()
        let pusherBefore = try counts(countDirectory, pusher), helperBefore = try counts(countDirectory, helper)
        Thread.sleep(forTimeInterval: seconds)
        let pusherAfter = try counts(countDirectory, pusher), helperAfter = try counts(countDirectory, helper)
        let endNs = TimeCode.nowNs()
        guard process.isRunning else {
            throw PushBenchmark.Failure(description: "\(label): livepush ended while counting: "
                + PushBenchmark.tail(logPath))
        }
        let elapsed = Double(endNs - startNs) / 1e9
        let frames = receiver.samples(from: startNs, to: endNs).count
        func rate(_ after: UInt64, _ before: UInt64) -> Double { Double(after - before) / elapsed }
        let rates = Rates(pusherAllocsPerS: rate(pusherAfter.allocations, pusherBefore.allocations),
                          pusherBytesPerS: rate(pusherAfter.bytes, pusherBefore.bytes),
                          pusherFreesPerS: rate(pusherAfter.frees, pusherBefore.frees),
                          helperAllocsPerS: rate(helperAfter.allocations, helperBefore.allocations),
                          helperBytesPerS: rate(helperAfter.bytes, helperBefore.bytes),
                          fps: Double(frames) / elapsed)
        PushBenchmark.log("alloc \(label): pusher allocs_per_s=\(PushBenchmark.format(rates.pusherAllocsPerS)) "
            + "bytes_per_s=\(PushBenchmark.format(rates.pusherBytesPerS)) helper allocs_per_s="
            + "\(PushBenchmark.format(rates.helperAllocsPerS)) fps=\(PushBenchmark.format(rates.fps))")
        return rates
    }

    /// The shim's counters of process `pid`: magic "LPALLOC1", then allocations, bytes and frees.
    static func counts(_ directory: String, _ pid: Int32) throws -> Counts {
        let path = "\(directory)/\(pid).count"
        guard let data = FileManager.default.contents(atPath: path), data.count >= 32,
              data.prefix(8) == Data("LPALLOC1".utf8)
        else {
            throw PushBenchmark.Failure(description: "no allocation counters at \(path): was the shim preloaded?")
        }
        func word(_ index: Int) -> UInt64 {
            data.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)) }
        }
        return Counts(allocations: word(1), bytes: word(2), frees: word(3))
    }
}
