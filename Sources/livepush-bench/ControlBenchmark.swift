import CommandLineSupport
import Control
import Foundation
import LivePush
import Media

/// Steering and watching (issue 14): what a control command, a preview JPEG and an event line
/// cost. A LivePusher at 1920x1080 30 fps (no helper: it encodes the black picture) with its
/// control socket; a client asks `status` over and over; the preview encoder turns a 1080p test
/// picture into JPEGs; an EventHub with no sinks encodes statistics lines.
enum ControlBenchmark {
    static let options: [OptionSpec] = [
        .value("count", valueName: "N", help: "Requests, JPEGs and event lines per run (default 500)."),
        .value("runs", valueName: "N", help: "Runs; the median of each figure is printed (default 3)."),
    ]

    struct Unexpected: Error, CustomStringConvertible { let description: String }

    static func main(_ arguments: [String]) -> Never {
        let parsed = ArgumentParser.parseOptionsOnly(
            arguments, options: options, command: "livepush-bench control",
            usage: "Usage: livepush-bench control [--count N] [--runs N]\n" + ArgumentParser.optionsHelp(options))
        let count = max(10, Int(parsed.value("count") ?? "500") ?? 500)
        let runs = parsed.runs(default: 3)
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func percentile(_ values: [Double], _ fraction: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
        }
        do {
            var p50: [Double] = [], p99: [Double] = [], jpegMs: [Double] = [], jpegBytes: [Double] = [], eventUs: [Double] = []
            for _ in 0..<runs {
                let trips = try statusRoundTrips(count: count)
                p50.append(percentile(trips, 0.5))
                p99.append(percentile(trips, 0.99))
                let jpeg = try jpegTimes(count: max(10, count / 10))
                jpegMs.append(percentile(jpeg.ms, 0.5))
                jpegBytes.append(Double(jpeg.bytes))
                eventUs.append(eventLineMicroseconds(count: count * 10))
            }
            print(String(format: "control status round_trip_us_p50=%.0f round_trip_us_p99=%.0f", median(p50), median(p99)))
            print(String(format: "control preview 1920x1080 jpeg_ms_p50=%.2f jpeg_bytes=%.0f", median(jpegMs), median(jpegBytes)))
            print(String(format: "control events statistics_line_us=%.1f", median(eventUs)))
            fflush(nil)
        } catch {
            Terminal.printError("livepush-bench control: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    /// Microseconds of each `status` request, from the client's write to its reading the answer.
    static func statusRoundTrips(count: Int) throws -> [Double] {
        var config = LivePushConfig()
        config.resolution = .size(width: 1920, height: 1080)
        let pusher = try LivePusher(config: config)
        let runtime = NSTemporaryDirectory() + "lpbench-\(getpid())"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let group = "bench-\(getpid())"
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime, audio: false)
        defer { pusher.destroy() }
        let server = try ControlServer(name: group, runtimeDirectory: runtime,
                                       handler: ControlHandler(pusher: pusher, hub: nil))
        server.start()
        defer { server.stop() }
        let client = try ControlClient(name: group, runtimeDirectory: runtime)
        var times: [Double] = []
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            let answer = try client.send(command: "status", args: [])
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
            guard answer.hasPrefix("{\"command\":\"status\",\"ok\":true") else { throw Unexpected(description: answer) }
        }
        return times
    }

    /// Milliseconds per JPEG of a 1080p test picture (ffmpeg's testsrc2), and its size.
    static func jpegTimes(count: Int) throws -> (ms: [Double], bytes: Int) {
        let path = NSTemporaryDirectory() + "lpbench-\(getpid()).png"
        let made = Process()
        made.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        made.arguments = ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=1920x1080", "-frames:v", "1", path]
        try made.run()
        made.waitUntilExit()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let frame = try VideoFrame(width: 1920, height: 1080)
        try StillImage.load(path: path).render(into: frame)
        let encoder = try JPEGEncoder(width: 1920, height: 1080)
        var times: [Double] = [], bytes = 0
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            bytes = try encoder.encode(frame).count
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        return (times, bytes)
    }

    /// Microseconds to turn one statistics callback into its JSON line (no sinks).
    static func eventLineMicroseconds(count: Int) -> Double {
        let hub = EventHub()
        var figures = LivePusherStatistics()
        figures.fps = 30
        figures.videoBitrateKbps = 4500
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 0..<count {
            figures.bytesSent = index
            hub.onStatisticsUpdate(figures)
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1000 / Double(count)
    }
}
