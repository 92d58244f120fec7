import Foundation

/// A late viewer's join with a keyframe on join (issue 22 item 7): LivePush publishes to the test
/// nginx's `live-kf` application, whose `exec_play` runs `livepush ctl --socket PATH keyframe` for
/// every player (tools/testenv, docs/guide.md), and the same late receivers as `JoinTime` join it.
/// Printed as its own lines beside `e2e push`; the `join_s=` of the push lines stays plain nginx.
enum JoinKeyframe {
    /// The variants measured: the keyframe alone, and with a second one after ffmpeg's probe
    /// (40 frames, 1.33 s at 30 fps, which `-fflags nobuffer` never decodes).
    static let followUpsMs: [Int?] = [nil, 1500]

    /// The `e2e join` lines, or nothing when the environment has no `live-kf` application.
    static func run(display: String, runs: Int, logs: String) throws {
        let environment = ProcessInfo.processInfo.environment
        guard let base = environment["LIVEPUSH_TEST_RTMP_KEYFRAME_URL"], let hooks = environment["LIVEPUSH_TEST_ON_PLAY_DIR"],
              let runtime = environment["XDG_RUNTIME_DIR"]
        else {
            PushBenchmark.log("e2e join: no LIVEPUSH_TEST_RTMP_KEYFRAME_URL (tools/testenv's live-kf): lines left out")
            return
        }
        let livepush = BenchSupport.sibling("livepush").path
        for followUpMs in followUpsMs {
            var seconds: [Double] = []
            for run in 1...runs {
                let key = "benchkf-\(getpid())-\(followUpMs ?? 0)-\(run)"
                let socket = "\(runtime)/livepush/\(key).control"
                let words = followUpMs.map { " --follow-up \($0)" } ?? ""
                try "exec \(livepush) ctl --socket \(socket) keyframe\(words)\n"
                    .write(toFile: "\(hooks)/\(key).sh", atomically: true, encoding: .utf8)
                let label = "e2e-kf\(followUpMs ?? 0) run \(run)/\(runs)"
                seconds += try measure(key: key, url: "\(base)/\(key)", socket: socket, display: display, logs: logs,
                                       label: label)
            }
            print(String(format: "e2e join 1080p30 keyframe_on_join=exec_play follow_up_ms=%d join_s=%.1f "
                + "join_s_min=%.1f join_s_max=%.1f joins=%d", followUpMs ?? 0, PushBenchmark.median(seconds),
                seconds.min() ?? .nan, seconds.max() ?? .nan, seconds.count))
        }
    }

    /// One publisher run: LivePush as in `e2e push` (1080p30, GOP 2 s, CBR 4500), named `key` so
    /// that the hook finds its control socket, and `JoinTime.joinsPerRun` late receivers.
    private static func measure(key: String, url: String, socket: String, display: String, logs: String,
                                label: String) throws -> [Double] {
        let publisher = PushBenchmark.makePublisher("e2e", display: display, url: url)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: publisher.executable)
        process.arguments = publisher.arguments + ["--name", key]
        process.standardInput = FileHandle.nullDevice
        let logPath = "\(logs)/\(key).log"
        try PushBenchmark.logOutput(of: process, to: logPath)
        try process.run()
        defer { PushBenchmark.stop(process) }
        let deadline = Date().addingTimeInterval(15)
        while !FileManager.default.fileExists(atPath: socket) {
            guard process.isRunning, Date() < deadline else {
                throw PushBenchmark.Failure(description: "\(label): no control socket \(socket) within 15 s: "
                    + PushBenchmark.tail(logPath))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: 3)  // publishing, past the first GOP, as the e2e push's receivers
        return try JoinTime.measure(url: url, logs: logs, label: label)
    }
}
