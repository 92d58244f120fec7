import Foundation
import LivePush
import Synchronization
import Testing
import TestSupport

/// The pusher's state under many threads at once (issue 31, item 1): while a helper feeds it and
/// it pushes to the test nginx, a dozen threads add and remove a second destination, pause and
/// resume, set bitrates, reconnect, start and stop the microphone and a recording, and read the
/// status, statistics and totals. Every status read must be one consistent picture, no call may
/// wait for ever (a deadlock fails the test), and once the threads are done the pusher must be
/// exactly where the last calls put it, still publishing.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp) && TestEnvironment.isEnabled(.pipewire),
                "needs nginx-rtmp and PipeWire (make test)"),
       .timeLimit(.minutes(10)))
struct PusherStateStressTests {
    /// What the observer heard, counted.
    final class Tally: LivePusherObserver, @unchecked Sendable {
        private let counts = Mutex((errors: [String](), recordingsBegun: 0, recordingsCompleted: 0, statistics: 0))
        func onError(code: Int32, message: String, extraInfo: [String: String]) {
            counts.withLock { $0.errors.append("\(code): \(message)") }
        }
        func onLocalRecordBegin(code: Int32, storagePath: String) {
            if code == 0 { counts.withLock { $0.recordingsBegun += 1 } }
        }
        func onLocalRecordComplete(code: Int32, storagePath: String) {
            counts.withLock { $0.recordingsCompleted += 1 }
        }
        func onStatisticsUpdate(_ statistics: LivePusherStatistics) { counts.withLock { $0.statistics += 1 } }
        var errors: [String] { counts.withLock { $0.errors } }
        var recordings: (begun: Int, completed: Int) { counts.withLock { ($0.recordingsBegun, $0.recordingsCompleted) } }
        var statistics: Int { counts.withLock { $0.statistics } }
    }

    /// What the worker threads saw: broken invariants and the slowest calls.
    final class Findings: @unchecked Sendable {
        private let state = Mutex((problems: [String](), slowestMs: [String: Double](), calls: 0))
        func problem(_ text: String) { state.withLock { if $0.problems.count < 20 { $0.problems.append(text) } } }
        /// Runs `body`, keeping how long the slowest call of `name` took.
        func timed<T>(_ name: String, _ body: () -> T) -> T {
            let start = Date()
            let result = body()
            let ms = Date().timeIntervalSince(start) * 1000
            state.withLock {
                $0.calls += 1
                $0.slowestMs[name] = max($0.slowestMs[name] ?? 0, ms)
            }
            return result
        }
        var problems: [String] { state.withLock { $0.problems } }
        var slowestMs: [String: Double] { state.withLock { $0.slowestMs } }
        var calls: Int { state.withLock { $0.calls } }
    }

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 30
        config.qualityMode = .custom
        config.targetVideoBitrateKbps = 1000
        config.minVideoBitrateKbps = 300
        config.initialVideoBitrateKbps = 800
        config.autoBitrate = false  // the bitrate is then exactly what the last call set
        return config
    }

    /// Runs `body` on its own thread until `deadline`, over and over.
    private func worker(_ group: DispatchGroup, until deadline: Date, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        Thread {
            while Date() < deadline { body() }
            group.leave()
        }.start()
    }

    @Test func concurrentCallsDuringAPushLeaveTheStateConsistent() throws {
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("stress")
        let tally = Tally()
        let pusher = try LivePusher(config: config(), observer: tally)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let helper = SignalHelper(group: group, runtime: runtime, picture: { UInt8(Int($0 * 300) % 256) },
                                  sound: { 0.25 * Float(sin(2 * Double.pi * 440 * $0)) })
        helper.start()
        let recordings = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("stress")).path
        try FileManager.default.createDirectory(atPath: recordings, withIntermediateDirectories: true)
        defer {
            helper.stop()
            pusher.destroy()
            try? FileManager.default.removeItem(atPath: recordings)  // clean-up only: nothing checked
        }
        let first = try TestEnvironment.liveURL(key: UniqueName.make("stress-a"))
        // Another application: the two keys are masked alike, the status tells them apart by it.
        let second = try TestEnvironment.recordURL(key: UniqueName.make("stress-b"))
        #expect(pusher.startPush(url: first) == 0)
        #expect(waitUntil(timeoutSeconds: 10) { pusher.status.destinations.first?.status == .connectSuccess },
                "\(pusher.status.destinations)")
        let redactedFirst = try #require(pusher.pushURLs.first)
        let mic = try TestEnvironment.microphone()

        let findings = Findings()
        let workers = DispatchGroup()
        let deadline = Date().addingTimeInterval(8)
        // Three threads add the second destination and remove whatever is at index 1: only it can be.
        for _ in 0..<3 {
            worker(workers, until: deadline) {
                let added = findings.timed("addPushDestination") { pusher.addPushDestination(url: second) }
                if added != 0 && added != -1 { findings.problem("addPushDestination returned \(added)") }
                Thread.sleep(forTimeInterval: Double.random(in: 0...0.3))
                _ = findings.timed("removePushDestination") { pusher.removePushDestination(index: 1) }
            }
        }
        for _ in 0..<2 {
            worker(workers, until: deadline) {
                findings.timed("pause") { pusher.pause() }
                Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.05))
                findings.timed("resume") { pusher.resume() }
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
        // Readers: each status is one consistent picture.
        for _ in 0..<2 {
            worker(workers, until: deadline) {
                let status = findings.timed("status") { pusher.status }
                let urls = status.destinations.map(\.url)
                if status.destinations.map(\.index) != Array(status.destinations.indices) {
                    findings.problem("indices \(status.destinations.map(\.index))")
                }
                if Set(urls).count != urls.count { findings.problem("a destination live twice: \(urls)") }
                if urls.first != redactedFirst { findings.problem("the first destination is not first: \(urls)") }
                if status.pushing != !urls.isEmpty { findings.problem("pushing \(status.pushing) with \(urls)") }
                if !status.capturing { findings.problem("not capturing") }
                if status.minVideoBitrateKbps > status.targetVideoBitrateKbps {
                    findings.problem("min \(status.minVideoBitrateKbps) over target \(status.targetVideoBitrateKbps)")
                }
                _ = findings.timed("statistics") { pusher.statistics }
                _ = findings.timed("pausedAndDestinations") { pusher.pausedAndDestinations }
                let totals = findings.timed("pushTotals") { pusher.pushTotals }
                if Set(totals.map(\.url)).count != totals.count { findings.problem("totals twice for one URL: \(totals)") }
                _ = findings.timed("isPushing") { pusher.isPushing }
                _ = findings.timed("placeholderShown") { pusher.placeholderShown }
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        worker(workers, until: deadline) {
            let kbps = Int.random(in: 400...1200)
            let code = findings.timed("setTargetVideoBitrate") { pusher.setTargetVideoBitrate(kbps: kbps) }
            if code != 0 { findings.problem("setTargetVideoBitrate(\(kbps)) returned \(code)") }
            _ = findings.timed("currentVideoBitrateKbps") { pusher.currentVideoBitrateKbps }
            Thread.sleep(forTimeInterval: 0.02)
        }
        worker(workers, until: deadline) {
            Thread.sleep(forTimeInterval: 2)
            _ = findings.timed("reconnectPush") { pusher.reconnectPush() }
        }
        worker(workers, until: deadline) {
            let path = recordings + "/" + UniqueName.make("part") + ".flv"
            let code = findings.timed("startLocalRecording") { pusher.startLocalRecording(path: path) }
            if code != 0 { findings.problem("startLocalRecording returned \(code)") }
            Thread.sleep(forTimeInterval: Double.random(in: 0.1...0.6))
            findings.timed("stopLocalRecording") { pusher.stopLocalRecording() }
        }
        worker(workers, until: deadline) {
            let code = findings.timed("startMicrophone") { pusher.startMicrophone(name: mic) }
            if code != 0 { findings.problem("startMicrophone returned \(code)") }
            Thread.sleep(forTimeInterval: Double.random(in: 0.3...0.8))
            findings.timed("stopMicrophone") { pusher.stopMicrophone() }
            Thread.sleep(forTimeInterval: 0.3)  // a few streams a second: the PipeWire daemon is shared with other tests
        }
        worker(workers, until: deadline) {
            findings.timed("setMute") { pusher.setMute(Bool.random(), source: .desktop) }
            findings.timed("setCaptureVolume") { pusher.setCaptureVolume(Int.random(in: 50...150)) }
            _ = findings.timed("requestKeyframe") { pusher.requestKeyframe() }
            _ = findings.timed("sendMessage") { pusher.sendMessage("stress", repeatCount: 1, delayMs: 0, keyFrameOnly: false) }
            Thread.sleep(forTimeInterval: 0.02)
        }
        // A deadlock fails here instead of hanging the suite.
        #expect(workers.wait(timeout: .now() + 60) == .success, "the workers did not finish within 60 s")
        let slowest = findings.slowestMs.sorted { $0.value > $1.value }.map { "\($0.key) \(Int($0.value)) ms" }
        print("PusherStateStressTests: \(findings.calls) calls; slowest: \(slowest.joined(separator: ", "))")
        #expect(findings.problems.isEmpty, "\(findings.problems)")
        #expect(findings.calls > 500, "only \(findings.calls) calls in 8 s")
        // How long the slowest calls took is printed, not checked: on this shared 2-core machine a
        // thread waits up to a second for the CPU (a load of 16 made status take 857 ms once).

        // Where the last calls put it.
        #expect(pusher.setTargetVideoBitrate(kbps: 900) == 0)
        #expect(pusher.currentVideoBitrateKbps == 900 && pusher.status.currentVideoBitrateKbps == 900)
        pusher.resume()
        pusher.setMute(false, source: .desktop)
        #expect(waitUntil(timeoutSeconds: 5) { pusher.placeholderShown == nil }, "\(pusher.placeholderShown ?? "")")
        #expect(!pusher.status.mutedSources.contains(.desktop))
        #expect(!pusher.status.paused)
        if pusher.pushURLs.count == 2 { #expect(pusher.removePushDestination(index: 1) == 0) }
        #expect(pusher.pushURLs == [redactedFirst])
        #expect(pusher.status.recordingPath == nil)
        let recordingsRun = tally.recordings
        #expect(recordingsRun.begun > 0)
        #expect(waitUntil(timeoutSeconds: 5) { tally.recordings.completed == recordingsRun.begun }, "\(tally.recordings)")
        // Still publishing, and the statistics tick still runs: the first destination sends.
        #expect(waitUntil(timeoutSeconds: 15) { pusher.status.destinations.first?.status == .connectSuccess },
                "\(pusher.status.destinations)")
        let ticks = tally.statistics
        #expect(waitUntil(timeoutSeconds: 10) { tally.statistics >= ticks + 2 && pusher.statistics.sendBitrateKbps > 0 },
                "\(pusher.statistics)")
        #expect(pusher.statistics.fps > 0, "\(pusher.statistics)")
        #expect(tally.errors.isEmpty, "\(tally.errors)")
        let totals = pusher.pushTotals
        #expect(totals.map(\.url).first == redactedFirst && Set(totals.map(\.url)).count == totals.count, "\(totals)")
    }
}
