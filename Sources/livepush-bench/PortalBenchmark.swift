import CaptureLink
import CommandLineSupport
import Foundation

/// Portal capture on a real desktop (run it as the desktop's user inside `tools/testenv run
/// --wayland`, through `$LIVEPUSH_TEST_WAYLAND_AS_USER`): `livepush-capture --source portal` into a
/// pusher endpoint here, measured alone; then GStreamer's `pipewiresrc path=NODE ! videoconvert !
/// fakesink` on the node that same portal session granted, while the helper still holds it.
enum PortalBenchmark {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "Length of each measurement (default 10)."),
        .value("runs", valueName: "N", help: "Runs of each case; the median is printed (default 1)."),
    ]

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func main(_ arguments: [String]) -> Never {
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "portal")
        let seconds = parsed.seconds(default: 10), runs = parsed.runs(default: 1)
        do {
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            var results: [Run] = []
            for _ in 0..<runs { results.append(try measure(seconds: seconds)) }
            let size = results[0].size
            print(String(format: "capture portal %@ fps=%.1f copy_ms_p50=%.2f helper_cpu_pct=%.1f", size,
                         median(results.map(\.fps)), median(results.map(\.copyMs)), median(results.map(\.helperCPU))))
            print(String(format: "gst pipewiresrc portal %@ cpu_pct=%.1f", size, median(results.map(\.gstCPU))))
            fflush(nil)
        } catch {
            Terminal.printError("livepush-bench portal: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    struct Run {
        var size: String
        var fps: Double
        var copyMs: Double
        var helperCPU: Double
        var gstCPU: Double
    }

    /// user + system CPU seconds of a running process (/proc/PID/stat, clock ticks).
    static func cpuSeconds(pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func measure(seconds: Double) throws -> Run {
        let consumer = try CountingEndpoint(group: "portal")
        defer { consumer.stop() }
        let runtime = consumer.runtime
        let errorsPath = runtime + "/helper.err"
        FileManager.default.createFile(atPath: errorsPath, contents: nil)
        let helper = Process()
        helper.executableURL = BenchSupport.sibling("livepush-capture")
        helper.arguments = ["--group", "portal", "--source", "portal", "--no-restore", "--stats"]
        // The rendezvous in a private directory; the session bus and the compositor stay the desktop's.
        var environment = ProcessInfo.processInfo.environment
        if let display = environment["WAYLAND_DISPLAY"], !display.hasPrefix("/"), let home = environment["XDG_RUNTIME_DIR"] {
            environment["WAYLAND_DISPLAY"] = home + "/" + display
        }
        environment["XDG_RUNTIME_DIR"] = runtime
        helper.environment = environment
        helper.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsPath))
        try helper.run()
        func errors() -> String { (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? "" }
        // The desktop's dialog is answered (by a person, or testenv's approver), then frames flow.
        let deadline = Date().addingTimeInterval(60)
        while consumer.count < 10 {
            guard helper.isRunning, Date() < deadline else {
                throw Failure(description: "no frames from livepush-capture --source portal: \(errors())")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let startFrames = consumer.count
        let startCPU = cpuSeconds(pid: helper.processIdentifier)
        let started = Date()
        Thread.sleep(forTimeInterval: seconds)
        let counted = consumer.count - startFrames
        let helperCPU = 100 * (cpuSeconds(pid: helper.processIdentifier) - startCPU) / Date().timeIntervalSince(started)

        let text = errors()
        guard let range = text.range(of: "capturing PipeWire node "),
              let node = Int(text[range.upperBound...].prefix { $0.isNumber }),
              let format = text[range.upperBound...].split(separator: "\n").first?.split(separator: " ").last
        else { throw Failure(description: "livepush-capture did not name its node: \(text)") }
        let gst = Process()
        gst.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        gst.arguments = ["-q", "pipewiresrc", "path=\(node)", "!", "videoconvert", "!", "fakesink"]
        gst.standardOutput = FileHandle.nullDevice
        gst.standardError = FileHandle.nullDevice
        let gstCPU = try BenchSupport.cpuPercent(running: gst, seconds: seconds).cpuPct

        consumer.endpoint.requestStop(text: "benchmark done")
        helper.waitUntilExit()
        let fields = KeyValueFields.parse(errors())
        guard let copyMs = fields["copy_ms_p50"] else {
            throw Failure(description: "livepush-capture printed no stats: \(errors())")
        }
        return Run(size: String(format), fps: Double(counted) / seconds, copyMs: copyMs, helperCPU: helperCPU,
                   gstCPU: gstCPU)
    }
}
