import Foundation

/// A viewer who joins mid-stream (issue 22 item 7): while a publisher is live, receivers are started
/// one after another at a random phase of the 2 s GOP, each `ffmpeg -fflags nobuffer -flags
/// low_delay -i rtmp://...` as a low-latency player would, and the time from a receiver's start
/// (its connect follows within milliseconds on 127.0.0.1) to its first decoded video frame is noted.
/// `-frames:v 1 -f null -` makes ffmpeg exit once that frame is decoded, so the receiver's exit is
/// the moment.
enum JoinTime {
    /// Late receivers per measured publisher run; the push lines print the median over all runs.
    static let joinsPerRun = 3

    /// The publishers' keyframe interval (`--gop 2`, `-g 60` at 30 fps, `key-int-max=60`).
    static let gopS = 2.0

    /// A receiver without a frame after this long has failed: the publisher's line cannot be printed.
    static let limitS = 15.0

    /// Seconds from each late receiver's start to its first decoded frame, for `joins` receivers of
    /// `url` in turn; throws when one gets no frame within `limitS`.
    static func measure(url: String, joins: Int = joinsPerRun, logs: String, label: String) throws -> [Double] {
        var seconds: [Double] = []
        let logPath = "\(logs)/join-\(label.split(separator: " ").first ?? "receiver").log"
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        for join in 1...joins {
            // A random phase of the GOP: nothing here is in step with the publisher's keyframes.
            Thread.sleep(forTimeInterval: Double.random(in: 0..<gopS))
            let receiver = Process()
            receiver.executableURL = URL(fileURLWithPath: PushBenchmark.ffmpeg)
            receiver.arguments = [
                "-nostdin", "-loglevel", "error", "-fflags", "nobuffer", "-flags", "low_delay",
                "-rw_timeout", "5000000", "-i", url, "-map", "0:v:0", "-frames:v", "1", "-f", "null", "-",
            ]
            receiver.standardInput = FileHandle.nullDevice
            receiver.standardOutput = FileHandle.nullDevice
            let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            try log.seekToEnd()
            receiver.standardError = log
            let startNs = TimeCode.nowNs()
            try receiver.run()
            let deadline = Date().addingTimeInterval(limitS)
            while receiver.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
            let elapsedS = Double(TimeCode.nowNs() - startNs) / 1e9
            if receiver.isRunning {
                PushBenchmark.stop(receiver)
                throw PushBenchmark.Failure(description: "\(label): late receiver \(join) had no frame in "
                    + "\(Int(limitS)) s: \(PushBenchmark.tail(logPath))")
            }
            guard receiver.terminationStatus == 0 else {
                throw PushBenchmark.Failure(description: "\(label): late receiver \(join) exited with "
                    + "\(receiver.terminationStatus): \(PushBenchmark.tail(logPath))")
            }
            seconds.append(elapsedS)
        }
        PushBenchmark.log("\(label): join_s=" + seconds.map(PushBenchmark.format).joined(separator: ","))
        return seconds
    }

    /// ` join_s=<median>` for a push line, or nothing when no late receiver could join (SRT: the
    /// receiver is the one listener the publisher calls).
    static func field(_ all: [PushBenchmark.Measurement]) -> String {
        let joins = all.flatMap(\.joinS)
        return joins.isEmpty ? "" : String(format: " join_s=%.1f", PushBenchmark.median(joins))
    }
}
