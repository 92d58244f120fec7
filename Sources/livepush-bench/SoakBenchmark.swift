import CommandLineSupport
import Foundation
import Glibc
import ReceivedMedia

/// The fault script of issue 8: one `livepush screen` push (pusher, its supervised helper, the
/// microphone, a recording) to the test environment's nginx, through helper kills, hangs,
/// protocol garbage and server restarts; then Ctrl-C. Runs inside `tools/testenv run`. One line
/// per fault kind, then the shutdown and the recording:
///   fault <kind> n=<count> survived=<count> max_gap_ms=<n> rss_growth_pct=<n> fd_growth=<n>
///   detect helper-hang n=<detected> max_ms=<n> median_ms=<n>   (SIGSTOP to "screen capture interrupted")
///   live-back <kind> n=<count> back=<count> max_ms=<n> median_ms=<n>   (helper faults)
///   shutdown exit_ms=<n> exit_code=<n> orphan_helpers=<n> stale_socket=<0|1>
///   recording frames=<n> duration_s=<n> decoded=<yes|no>
enum SoakBenchmark {
    static let options: [OptionSpec] = [
        .value("kills", valueName: "N", help: "kill -9 the helper N times (default 50)."),
        .value("hangs", valueName: "N", help: "SIGSTOP the helper N times (default 5)."),
        .value("garbage", valueName: "N", help: "A helper that breaks the protocol mid-stream, N times (default 5)."),
        .value("nginx-restarts", valueName: "N", help: "Restart nginx N times (default 10)."),
        .value("hostile", valueName: "PATH", help: "Tests/Fixtures/hostile_helper.py."),
        .value("painter", valueName: "PATH", help: "The x11-paint test client (moving content; required)."),
    ]

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func main(_ arguments: [String]) -> Never {
        do {
            let parsed = try ArgumentParser.parse(arguments, options: options)
            func count(_ name: String, _ fallback: Int) -> Int { Int(parsed.value(name) ?? "") ?? fallback }
            guard let hostile = parsed.value("hostile") else { throw Failure(description: "--hostile PATH is required") }
            guard let painter = parsed.value("painter") else {
                throw Failure(description: "--painter PATH is required: the live screen after each fault is its square")
            }
            let soak = try Soak(hostile: hostile, painter: painter)
            defer { soak.cleanUp() }
            try soak.run(kills: count("kills", 50), hangs: count("hangs", 5), garbage: count("garbage", 5),
                         nginxRestarts: count("nginx-restarts", 10))
        } catch {
            Terminal.printError("livepush-bench soak: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }
}

/// One soak run; see `SoakBenchmark`.
final class Soak {
    let environmentDirectory: String
    let display: String
    let rtmpURL: String
    let recordDirectory: String
    let workDirectory: String
    let key = "soak\(getpid())"
    let marker: String
    let recordingPath: String
    private var livepush: Process?
    private var painter: Process?
    private var errorLog: String
    private var nginx: Process?

    init(hostile: String, painter painterPath: String?) throws {
        func variable(_ name: String) throws -> String {
            guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
                throw SoakBenchmark.Failure(description: "\(name) is not set: run inside tools/testenv run")
            }
            return value
        }
        environmentDirectory = try variable("LIVEPUSH_TESTENV_DIR")
        display = try variable("LIVEPUSH_TEST_DISPLAY")
        rtmpURL = try variable("LIVEPUSH_TEST_RTMP_URL")
        recordDirectory = try variable("LIVEPUSH_TEST_RTMP_RECORD_DIR")
        workDirectory = NSTemporaryDirectory() + "livepush-soak-\(getpid())"
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        marker = workDirectory + "/garbage-next"
        recordingPath = workDirectory + "/soak.mp4"
        errorLog = workDirectory + "/livepush.err"
        // The helper livepush supervises: livepush-capture, or, once after each marker, a helper
        // that sends two frames and then breaks the protocol (it always exits 1: a crash).
        let script = """
            #!/bin/sh
            if [ -e '\(marker)' ]; then
                rm -f '\(marker)'
                group=""; previous=""
                for argument in "$@"; do [ "$previous" = "--group" ] && group="$argument"; previous="$argument"; done
                python3 '\(hostile)' --group "$group" --case sequence-backwards --timeout 2 >/dev/null
                exit 1
            fi
            exec '\(BenchSupport.sibling("livepush-capture").path)' "$@"

            """
        try script.write(toFile: workDirectory + "/helper", atomically: true, encoding: .utf8)
        chmod(workDirectory + "/helper", 0o755)
        if let painterPath {
            let painter = Process()
            painter.executableURL = URL(fileURLWithPath: painterPath)
            painter.arguments = ["--display", display, "--geometry", "640x360+0+0", "square", "1e2a3a", "ffcc00", "240", "12"]
            painter.standardInput = Pipe()
            painter.standardOutput = FileHandle.nullDevice
            try painter.run()
            self.painter = painter
        }
    }

    func cleanUp() {
        if let livepush, livepush.isRunning { kill(livepush.processIdentifier, SIGKILL) }
        painter?.terminate()
        nginx?.terminate()
        nginx?.waitUntilExit()
        try? FileManager.default.removeItem(atPath: workDirectory)
    }

    // MARK: The run

    func run(kills: Int, hangs: Int, garbage: Int, nginxRestarts: Int) throws {
        let livepush = Process()
        livepush.executableURL = BenchSupport.sibling("livepush")
        livepush.arguments = ["screen", "\(rtmpURL)/record/\(key)", recordingPath, "--display", display,
                              "--region", "0,0,640,360", "--resolution", "640x360", "--helper", workDirectory + "/helper",
                              "--retry-interval", "1000", "--retry-count", "30",
                              "--allow-core-dump"]  // its /proc/PID/fd is read: dumpable, so without root too
        _ = FileManager.default.createFile(atPath: errorLog, contents: nil)
        livepush.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorLog))
        livepush.standardOutput = FileHandle.nullDevice
        livepush.standardInput = FileHandle.nullDevice
        try livepush.run()
        self.livepush = livepush
        guard waitFor(count("screen capture started") >= 1, seconds: 15) else {
            throw SoakBenchmark.Failure(description: "livepush never started capturing: \(tail())")
        }
        // Warm up: buffers and pools fill, and a few helper restarts at the phases' pace make
        // libdispatch create its timer and event descriptors (once per process, lazily), so the
        // baseline holds them too.
        Thread.sleep(forTimeInterval: 3)
        for round in 1...3 {
            guard let helper = helperPid() else { break }
            kill(helper, SIGKILL)
            _ = waitFor(count("screen capture started") >= round + 1, seconds: 10)
            Thread.sleep(forTimeInterval: 1.5)
        }
        Thread.sleep(forTimeInterval: 3)
        let baseline = usage()
        baselineTargets = descriptorTargets()

        var hangDetectionsMs: [Int] = []
        try phase("helper-kill", count: kills, baseline: baseline) {
            guard let helper = self.helperPid() else { return false }
            let starts = self.count("screen capture started")
            try self.noteFault("helper-kill")
            kill(helper, SIGKILL)
            return self.waitFor(self.count("screen capture started") > starts, seconds: 10)
        }
        try phase("helper-hang", count: hangs, baseline: baseline) {
            guard let helper = self.helperPid() else { return false }
            let starts = self.count("screen capture started"), interruptions = self.count("screen capture interrupted")
            try self.noteFault("helper-hang")
            kill(helper, SIGSTOP)
            let stoppedAt = Date()
            let detected = self.waitFor(self.count("screen capture interrupted") > interruptions, seconds: 6)
            if detected { hangDetectionsMs.append(Int(Date().timeIntervalSince(stoppedAt) * 1000)) }
            Thread.sleep(forTimeInterval: 0.5)
            kill(helper, SIGCONT)
            return detected && self.waitFor(self.count("screen capture started") > starts, seconds: 10)
        }
        try phase("helper-garbage", count: garbage, baseline: baseline) {
            guard let helper = self.helperPid() else { return false }
            let starts = self.count("screen capture started"), violations = self.count("screen capture interrupted")
            _ = FileManager.default.createFile(atPath: self.marker, contents: nil)
            try self.noteFault("helper-garbage")
            kill(helper, SIGKILL)
            // The hostile helper's session starts, breaks the rules, ends; then the real one is back.
            return self.waitFor(self.count("screen capture interrupted") > violations, seconds: 10)
                && self.waitFor(self.count("screen capture started") >= starts + 2, seconds: 10)
        }
        if !hangDetectionsMs.isEmpty {
            let sorted = hangDetectionsMs.sorted()
            print("detect helper-hang n=\(sorted.count) max_ms=\(sorted.last ?? 0) median_ms=\(sorted[sorted.count / 2])")
        }
        try printLiveBack()
        // The server's restarts end the receiver's recording each time (nginx starts the file
        // again; the old one is moved aside): the gap is the time from the server being back to
        // the first picture in the file it writes.
        var restartGapsMs: [Int] = []
        try phase("nginx-restart", count: nginxRestarts, baseline: baseline, gaps: { restartGapsMs }) {
            let published = self.count("publishing to")
            try self.restartNginx()
            let backAt = Date()
            guard self.waitFor(self.receivedPicture(), seconds: 10) else { return false }
            restartGapsMs.append(Int(Date().timeIntervalSince(backAt) * 1000))
            guard self.waitFor(self.count("publishing to") > published, seconds: 10) else { return false }
            Thread.sleep(forTimeInterval: 1)
            return true
        }
        try shutdown()
    }

    /// Runs `fault` `count` times, 1.5 s apart, and prints the kind's line.
    private func phase(_ kind: String, count: Int, baseline: (rssKiB: Int, fds: Int),
                       gaps: (() -> [Int])? = nil, _ fault: () throws -> Bool) throws {
        guard count > 0 else { return }
        let firstMs = try lastVideoMs()
        var survived = 0
        for _ in 0..<count {
            if try fault() { survived += 1 }
            Thread.sleep(forTimeInterval: 1.5)
        }
        Thread.sleep(forTimeInterval: 2)
        let after = usage()
        if after.fds > baseline.fds {
            // Say what the new descriptors are (kinds only: numbers change with every socket).
            func kinds(_ targets: [String]) -> [String: Int] {
                targets.reduce(into: [:]) { $0[$1.hasPrefix("anon_inode") ? $1 : $1.split(separator: ":").first.map(String.init) ?? $1, default: 0] += 1 }
            }
            let now = kinds(descriptorTargets()), before = kinds(baselineTargets)
            let grown = now.filter { $0.value > before[$0.key] ?? 0 }.map { "\($0.key) +\($0.value - (before[$0.key] ?? 0))" }
            Terminal.printError("livepush-bench soak: \(kind): descriptors grew: \(grown.sorted().joined(separator: ", "))")
        }
        let maxGapMs = try gaps.map { $0().max() ?? 0 } ?? maxVideoGapMs(after: firstMs)
        let rssGrowth = Double(after.rssKiB - baseline.rssKiB) * 100 / Double(max(1, baseline.rssKiB))
        print(String(format: "fault %@ n=%d survived=%d max_gap_ms=%d rss_growth_pct=%.1f fd_growth=%d", kind, count,
                     survived, maxGapMs, rssGrowth, after.fds - baseline.fds))
        FileHandle.standardOutput.synchronizeFile()
    }

    private func shutdown() throws {
        guard let livepush else { return }
        let group = "screen-\(livepush.processIdentifier)"
        let interruptedAt = Date()
        kill(livepush.processIdentifier, SIGINT)
        livepush.waitUntilExit()
        let exitMs = Int(Date().timeIntervalSince(interruptedAt) * 1000)
        Thread.sleep(forTimeInterval: 0.2)
        let orphans = processes(containing: "--group \(group)").count
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/tmp"
        let sockets = (try? FileManager.default.contentsOfDirectory(atPath: runtime + "/livepush")) ?? []
        print("shutdown exit_ms=\(exitMs) exit_code=\(livepush.terminationStatus) orphan_helpers=\(orphans) "
            + "stale_socket=\(sockets.contains { $0.hasPrefix(group) } ? 1 : 0)")
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                           "stream=nb_read_frames:format=duration", "-of", "default=nw=1", recordingPath]
        let output = Pipe()
        probe.standardOutput = output
        probe.standardError = FileHandle.nullDevice
        try probe.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        func field(_ name: String) -> String {
            text.split(separator: "\n").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) } ?? "0"
        }
        let seconds = Double(field("duration")) ?? 0
        print(String(format: "recording frames=%@ duration_s=%.1f decoded=%@", field("nb_read_frames"), seconds,
                     probe.terminationStatus == 0 ? "yes" : "no"))
        guard probe.terminationStatus == 0 else {
            throw SoakBenchmark.Failure(description: "ffprobe could not read the recording \(recordingPath)")
        }
    }

    // MARK: Observing

    private func count(_ text: String) -> Int {
        ((try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? "").components(separatedBy: text).count - 1
    }

    private func tail() -> String { String(((try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? "").suffix(2000)) }

    private func waitFor(_ condition: @autoclosure () -> Bool, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition()
    }

    /// What the pusher's descriptors point at (`socket:[123]`, `pipe:[45]`, paths), sorted.
    private func descriptorTargets() -> [String] {
        guard let pid = livepush?.processIdentifier else { return [] }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }.sorted()
    }

    private var baselineTargets: [String] = []

    /// The pusher's resident memory (KiB) and open descriptors.
    private func usage() -> (rssKiB: Int, fds: Int) {
        guard let pid = livepush?.processIdentifier else { return (0, 0) }
        let rss = ProcessTree.statusKiB(pid, "VmRSS")
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
        return (rss, fds)
    }

    private func helperPid() -> Int32? {
        guard let pid = livepush?.processIdentifier else { return nil }
        return processes(containing: "livepush-capture").first { parent(of: $0) == pid || parent(of: parent(of: $0)) == pid }
    }

    private func parent(of pid: Int32) -> Int32 {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        return Int32(stat[stat.index(close, offsetBy: 2)...].split(separator: " ")[1]) ?? 0
    }

    /// Live (not zombie) processes whose command line contains `text`.
    private func processes(containing text: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard pid != getpid(),
                  let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")"), !stat[stat.index(close, offsetBy: 2)...].hasPrefix("Z")
            else { return false }
            return String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self).contains(text)
        }
    }

    /// Video packet times (ms) of what nginx recorded so far. A file ffprobe cannot read is an
    /// error, never an empty list (which would read as "no gap").
    private func videoTimesMs() throws -> [Int] {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        let file = receivedPath
        probe.arguments = ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts", "-of", "csv=p=0", file]
        let output = Pipe(), errors = Pipe()
        probe.standardOutput = output
        probe.standardError = errors
        try probe.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        let times = text.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard probe.terminationStatus == 0, !times.isEmpty else {
            throw SoakBenchmark.Failure(description: "ffprobe could not read what nginx recorded (\(file)): \(problem.suffix(500))")
        }
        return times
    }

    private func lastVideoMs() throws -> Int { try videoTimesMs().last ?? 0 }

    private var receivedPath: String { recordDirectory + "/\(key).flv" }
    private var restarts = 0

    /// Whether the file nginx writes holds a picture (false while it does not exist yet).
    private func receivedPicture() -> Bool { ((try? FLVTagReader.lastVideoMs(receivedPath)) ?? nil) != nil }

    // MARK: The live screen back after each helper fault

    /// The stream time (ms) of the last picture nginx had received when each fault began, by kind.
    private var faultsMs: [(kind: String, ms: Int)] = []

    private func noteFault(_ kind: String) throws {
        guard let ms = try FLVTagReader.lastVideoMs(receivedPath) else {
            throw SoakBenchmark.Failure(description: "\(kind): nginx has received no picture yet (\(receivedPath))")
        }
        faultsMs.append((kind, ms))
    }

    /// Decodes what nginx received so far and prints, per helper fault kind, after how many
    /// faults the painter's square came back live (undimmed, moving) after the placeholder, and
    /// how long after the fault (stream time): the worst and the median.
    private func printLiveBack() throws {
        guard !faultsMs.isEmpty else { return }
        let snapshot = workDirectory + "/helper-faults.flv"
        try FileManager.default.copyItem(atPath: receivedPath, toPath: snapshot)
        let pictures = try ReceivedPictures.decode(snapshot)
        let square = PainterSquare(minShare: 0.15)
        for kind in ["helper-kill", "helper-hang", "helper-garbage"] {
            let faults = faultsMs.filter { $0.kind == kind }
            guard !faults.isEmpty else { continue }
            let recoveries = faults.map { square.recovery(after: $0.ms, in: pictures) }
            for recovery in recoveries where recovery.liveBackMs == nil {
                Terminal.printError("livepush-bench soak: \(kind): \(recovery)")
            }
            let backMs = recoveries.compactMap(\.liveBackMs).sorted()
            print("live-back \(kind) n=\(faults.count) back=\(backMs.count) max_ms=\(backMs.last ?? -1) "
                + "median_ms=\(backMs.isEmpty ? -1 : backMs[backMs.count / 2])")
        }
        FileHandle.standardOutput.synchronizeFile()
    }

    /// The longest gap between consecutive video timestamps after `startMs`.
    private func maxVideoGapMs(after startMs: Int) throws -> Int {
        let times = try videoTimesMs().filter { $0 >= startMs }
        guard times.count >= 2 else {
            throw SoakBenchmark.Failure(description: "nginx recorded \(times.count) video packets after \(startMs) ms: nothing to measure")
        }
        return zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? 0
    }

    // MARK: The server

    /// Stops the test environment's nginx (SIGTERM, waited for) and starts it again with the
    /// same command line on the same ports.
    private func restartNginx() throws {
        defer { restarts += 1 }
        if let nginx {
            nginx.terminate()
            nginx.waitUntilExit()
        } else {
            // The first time: the one tools/testenv started (nginx rewrites its command line, so
            // the arguments come from testenv's layout, as it starts it).
            let pids = (try? String(contentsOfFile: environmentDirectory + "/pids", encoding: .utf8)) ?? ""
            guard let line = pids.split(separator: "\n").first(where: { $0.hasPrefix("nginx ") }),
                  let pid = Int32(line.split(separator: " ")[1]) else {
                throw SoakBenchmark.Failure(description: "the test environment's nginx is not running")
            }
            kill(pid, SIGTERM)
            let deadline = Date().addingTimeInterval(5)
            while kill(pid, 0) == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        }
        // What nginx wrote up to now goes aside, so the file it writes next is only what arrives after.
        // (None there when the previous restart's push never arrived: that restart was not survived.)
        if FileManager.default.fileExists(atPath: receivedPath) {
            try FileManager.default.moveItem(atPath: receivedPath, toPath: workDirectory + "/received-\(restarts).flv")
        }
        Thread.sleep(forTimeInterval: 1)
        let restarted = Process()
        restarted.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        restarted.arguments = ["-p", environmentDirectory + "/nginx/", "-c", environmentDirectory + "/nginx/nginx.conf",
                               "-e", environmentDirectory + "/logs/nginx-restarted.log"]
        restarted.standardInput = FileHandle.nullDevice
        restarted.standardOutput = FileHandle.nullDevice
        restarted.standardError = FileHandle.nullDevice
        try restarted.run()
        nginx = restarted
        let port = UInt16(rtmpURL.split(separator: ":").last ?? "") ?? 0
        for _ in 0..<100 where !portOpen(port) { Thread.sleep(forTimeInterval: 0.05) }
    }

    private func portOpen(_ port: UInt16) -> Bool {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
