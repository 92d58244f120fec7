import CommandLineSupport
import Foundation
import ReceivedMedia

/// Pushing on a busy machine (issue 29): `livepush push`, ffmpeg's x11grab pipeline and GStreamer's
/// (the publishers of `push`) each send the 1080p30 screen and the microphone to the test nginx-rtmp's
/// `record` application while two busy loops of the bench's own take both cores (a CPU hog, as
/// `stress-ng --cpu 2` makes). Tests/Fixtures/av_stimulus.py turns the screen white and starts a
/// 3 kHz burst in the test microphone at the same instants; nginx's FLV is then read: the A/V offset
/// (mean of every flash's burst onset minus its flash onset), its drift (least-squares slope over
/// the run), the pictures a second, the pictures missing by their timestamps, and the sound's holes
/// (5 ms without the mic's tone). And a stall: `livepush push` stopped (SIGSTOP) for 800 ms, the
/// longest time without a new picture at nginx, less one frame.
enum LoadBenchmark {
    static let options: [OptionSpec] = [
        .value("painter", valueName: "PATH", help: "The x11-paint test client (tools/testclients/x11-paint.c, built)."),
        .value("seconds", valueName: "N", help: "Length of each loaded push (default 60)."),
        .value("runs", valueName: "N", help: "Runs of each publisher; the median is printed (default 1)."),
        .value("publishers", valueName: "LIST", help: "Which publishers under load (default e2e,ffmpeg,gstreamer)."),
        .value("display", valueName: ":N", help: "X display (default $LIVEPUSH_TEST_DISPLAY, else $DISPLAY)."),
        .value("rtmp", valueName: "URL", help: "rtmp://127.0.0.1:PORT (default $LIVEPUSH_TEST_RTMP_URL)."),
        .value("stimulus", valueName: "PATH", help: "The flash-and-burst script (default Tests/Fixtures/av_stimulus.py)."),
    ]

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// What nginx received from one loaded push.
    struct Figures {
        var fps = 0.0, avSyncMs = 0.0, driftMsPerMin = 0.0
        var skipped = 0, audioGapMs = 0
    }

    /// The mic's tone at nginx is a hole where a 5 ms window is under this (the tone plays at -18 dBFS).
    static let holeDbfs = -50.0

    static func main(_ arguments: [String]) -> Never {
        BenchSupport.unblockAllSignals()
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "load")
        let environment = ProcessInfo.processInfo.environment
        guard let painter = parsed.value("painter"), let display = BenchSupport.display(parsed),
              let rtmp = BenchSupport.rtmp(parsed), let records = environment["LIVEPUSH_TEST_RTMP_RECORD_DIR"],
              let sink = environment["LIVEPUSH_TEST_MIC_SINK"], environment["PULSE_SERVER"] != nil
        else {
            Terminal.printError("livepush-bench load: --painter PATH, and the test environment (its display, nginx, "
                + "PipeWire and pipewire-pulse: tools/testenv run --screen 1920x1080 -- ...) are required")
            Terminal.exit(.usage)
        }
        let seconds = parsed.seconds(default: 60), runs = parsed.runs(default: 1)
        let names = (parsed.value("publishers") ?? "e2e,ffmpeg,gstreamer").split(separator: ",").map(String.init)
        let stimulus = parsed.value("stimulus") ?? FileManager.default.currentDirectoryPath + "/Tests/Fixtures/av_stimulus.py"
        let painterPrefix = [painter, "--display", display, "--override-redirect", "--geometry", "1920x1080+0+0"]
        do {
            var results: [String: [Figures]] = [:]
            var lostMs: [Double] = []
            for run in 1...runs {
                for name in names {
                    let key = "load-\(name)-\(getpid())-\(run)"
                    let publisher = PushBenchmark.makePublisher(name, display: display, url: "\(rtmp)/record/\(key)")
                    let flv = "\(records)/\(key).flv"
                    let figures = try loaded(publisher, flv: flv, seconds: seconds, stimulus: stimulus,
                                             painter: painterPrefix, sink: sink)
                    log("\(name) run \(run)/\(runs): fps=\(figures.fps) av_sync_ms=\(figures.avSyncMs) "
                        + "drift=\(figures.driftMsPerMin) skipped=\(figures.skipped) audio_gap_ms=\(figures.audioGapMs)")
                    results[name, default: []].append(figures)
                    try? FileManager.default.removeItem(atPath: flv)
                }
                let key = "stall-\(getpid())-\(run)"
                let flv = "\(records)/\(key).flv"
                lostMs.append(try stalled(PushBenchmark.makePublisher("e2e", display: display, url: "\(rtmp)/record/\(key)"),
                                          flv: flv, stallMs: 800))
                log("stall run \(run)/\(runs): video_lost_ms=\(lostMs.last!)")
                try? FileManager.default.removeItem(atPath: flv)
            }
            for name in names {
                let all = results[name] ?? []
                print(String(format: "%@ push 1080p30 load=cpu-hog fps=%.1f av_sync_ms=%.1f av_drift_ms_per_min=%.2f "
                    + "skipped=%d audio_gap_ms=%d", name, median(all.map(\.fps)), median(all.map(\.avSyncMs)),
                    median(all.map(\.driftMsPerMin)), Int(median(all.map { Double($0.skipped) })),
                    Int(median(all.map { Double($0.audioGapMs) }))))
            }
            print(String(format: "e2e push 1080p30 stall_ms=800 video_lost_ms=%.0f", median(lostMs)))
        } catch {
            Terminal.printError("livepush-bench load: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    /// One push of `seconds` under the hog, with the flashes and bursts; what nginx got.
    static func loaded(_ publisher: PushBenchmark.Publisher, flv: String, seconds: Double, stimulus: String,
                       painter: [String], sink: String) throws -> Figures {
        // tools/cpu-hog: a busy loop that also ends when the bench is gone (killed before its defer).
        let hogScript = FileManager.default.currentDirectoryPath + "/tools/cpu-hog"
        let hog = try (0..<2).map { _ in try run(hogScript, []) }
        defer { hog.forEach(PushBenchmark.stop) }
        let process = try run(publisher.executable, publisher.arguments)
        defer { PushBenchmark.stop(process) }
        try waitForGrowth(flv, process: process)
        let flashes = max(5, Int(seconds / 1.2))
        let stimulated = Process()
        stimulated.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        stimulated.arguments = [stimulus, painter.joined(separator: "\u{1f}"), sink, String(flashes)]
        let errors = Pipe()
        stimulated.standardOutput = FileHandle.nullDevice
        stimulated.standardError = errors
        try stimulated.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        stimulated.waitUntilExit()
        guard stimulated.terminationStatus == 0 else {
            throw Failure(description: "\(stimulus) failed: \(String(decoding: said, as: UTF8.self))")
        }
        PushBenchmark.stop(process)
        hog.forEach(PushBenchmark.stop)
        try waitUntilClosed(flv)
        return try analyse(flv)
    }

    /// `livepush push` stopped for `stallMs` after 3 s: the longest time nginx had no new picture, less a frame.
    static func stalled(_ publisher: PushBenchmark.Publisher, flv: String, stallMs: Int) throws -> Double {
        let process = try run(publisher.executable, publisher.arguments)
        defer { PushBenchmark.stop(process) }
        try waitForGrowth(flv, process: process)
        Thread.sleep(forTimeInterval: 3)  // 3 s of stream before the stall
        kill(process.processIdentifier, SIGSTOP)
        Thread.sleep(forTimeInterval: Double(stallMs) / 1000)  // the stall
        kill(process.processIdentifier, SIGCONT)
        Thread.sleep(forTimeInterval: 3)  // 3 s of stream after it
        PushBenchmark.stop(process)
        try waitUntilClosed(flv)
        let timesMs = try FLVTagReader.tags(flv).filter(\.isVideoPicture).map(\.timestampMs)
        let largestMs = zip(timesMs, timesMs.dropFirst()).map { $1 - $0 }.max() ?? 0
        return max(0, Double(largestMs) - 1000.0 / 30)
    }

    // MARK: What nginx received

    static func analyse(_ flv: String) throws -> Figures {
        // Small grey pictures with their times: enough for the flashes' mean luma (SyncMarks).
        let pictures = try ReceivedPictures.decode(flv, width: 8)
        let times = pictures.timesMs.map { Double($0) / 1000 }
        guard times.count > 60 else { throw Failure(description: "\(times.count) pictures in \(flv)") }
        var figures = Figures()
        figures.fps = Double(times.count - 1) / (times.last! - times.first!)
        figures.skipped = zip(times, times.dropFirst()).reduce(0) { $0 + max(0, Int((($1.1 - $1.0) * 30).rounded()) - 1) }
        let flashes = SyncMarks.flashOnsetsS(pictures)
        let (startS, samples) = try sound(flv)
        let bursts = SyncMarks.burstOnsetsS(samples, startS: startS, frequencyHz: 3000)
        guard !flashes.isEmpty, !bursts.isEmpty else {
            throw Failure(description: "\(flashes.count) flashes, \(bursts.count) bursts in \(flv)")
        }
        // A flash whose burst is missing (a hole in the sound ate its onset) pairs with a neighbour
        // 1.2 s away: it has no offset, and is left out (counted in the log).
        let all = SyncMarks.pairs(flashesS: flashes, onsetsS: bursts)
        let pairs = all.filter { abs($0.offsetMs) < 500 }
        log("\(flv): offsets \(all.map { Int($0.offsetMs) }), \(all.count - pairs.count) flashes without a burst")
        guard pairs.count >= 3, let drift = SyncMarks.slope(pairs.map { ($0.timeS / 60, $0.offsetMs) }) else {
            throw Failure(description: "\(pairs.count) flashes paired in \(flv)")
        }
        figures.avSyncMs = pairs.reduce(0) { $0 + $1.offsetMs } / Double(pairs.count)
        figures.driftMsPerMin = drift
        let quiet = stride(from: 48000, to: max(48000, samples.count - 48000 - 240), by: 240).filter { start in
            let window = samples[start..<start + 240]
            return 10 * log10(window.reduce(0) { $0 + Double($1) * Double($1) } / 240 + 1e-20) < holeDbfs
        }
        figures.audioGapMs = quiet.count * 5
        return figures
    }

    /// The sound's start time and its samples, mono 48 kHz.
    static func sound(_ flv: String) throws -> (Double, [Float]) {
        let start = try capture("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries",
                                                     "stream=start_time", "-of", "csv=p=0", flv])
        guard let startS = Double(String(decoding: start, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw Failure(description: "no sound in \(flv)") }
        let raw = try capture(PushBenchmark.ffmpeg, ["-nostdin", "-v", "error", "-i", flv, "-map", "0:a:0", "-ac", "1",
                                                     "-ar", "48000", "-f", "f32le", "-"])
        let samples = raw.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return (startS, samples)
    }

    // MARK: Helpers

    static func run(_ executable: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func capture(_ executable: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(description: "\(executable) \(arguments) failed") }
        return data
    }

    /// Until nginx's file for the stream has grown past 100 KiB (publishing for a while), at most 30 s.
    static func waitForGrowth(_ path: String, process: Process) throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && process.isRunning {
            if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > 100 * 1024 {
                return
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw Failure(description: "nothing reached nginx in \(path)")
    }

    /// Until the file has not grown for 1 s (nginx closed it), at most 10 s.
    static func waitUntilClosed(_ path: String) throws {
        var last = -1, stableSince = Date()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int ?? -1
            if size != last { (last, stableSince) = (size, Date()) }
            if size > 0 && Date().timeIntervalSince(stableSince) >= 1 { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw Failure(description: "\(path) never settled")
    }

    static func median(_ values: [Double]) -> Double { PushBenchmark.median(values) }

    static func log(_ line: String) { FileHandle.standardError.write(Data("load: \(line)\n".utf8)) }
}
