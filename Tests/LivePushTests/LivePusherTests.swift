import Foundation
import LivePush
import Testing
import TestSupport

/// The SDK end to end without X: the C reference helper feeds a LivePusher, which records;
/// the observer hears every event, in order.
@Suite(.timeLimit(.minutes(10))) struct LivePusherTests {
    final class Recorder: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var events: [String] = []
        let completed = DispatchSemaphore(value: 0)

        private func add(_ event: String) { lock.withLock { events.append(event) } }
        var all: [String] { lock.withLock { events } }

        func onCaptureFirstVideoFrame() { add("firstVideoFrame") }
        func onScreenCaptureStarted() { add("screenCaptureStarted") }
        func onScreenCaptureStopped(reason: Int32) { add("screenCaptureStopped(\(reason))") }
        func onLocalRecordBegin(code: Int32, storagePath: String) { add("recordBegin(\(code))") }
        func onLocalRecording(durationMs: Int, storagePath: String) { add("recording") }
        func onLocalRecordComplete(code: Int32, storagePath: String) {
            add("recordComplete(\(code))")
            completed.signal()
        }
        func onWarning(code: Int32, message: String, extraInfo: [String: String]) { add("warning(\(code))") }
        func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String]) {
            add("push(\(status.rawValue))")
        }
        func onError(code: Int32, message: String, extraInfo: [String: String]) { add("error(\(code))") }
    }

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 30
        return config
    }

    @Test func observerHearsTheLifecycleInOrderAndTheFilePlays() throws {
        let runtime = privateRuntimeDirectory()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("sdk")).path + ".mp4"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let observer = Recorder()
        let pusher = try LivePusher(config: config(), observer: observer)
        try pusher.startScreenCapture(group: "sdk", runtimeDirectory: runtime)
        #expect(pusher.startLocalRecording(path: path, progressIntervalMs: 500) == 0)
        let helper = try ProcessRunner.start(try Repository.cPatternHelper(), [
            "--group", "sdk", "--size", "640x480", "--frames", "60",
        ], environment: ["XDG_RUNTIME_DIR": runtime])
        let result = helper.finish()
        #expect(result.exitCode == 0, "\(result)")
        #expect(waitUntil(timeoutSeconds: 10) {
            observer.all.contains("screenCaptureStopped(0)") && observer.all.contains("recording")
        }, "\(observer.all)")
        pusher.stopLocalRecording()
        #expect(observer.completed.wait(timeout: .now() + 5) == .success)
        pusher.destroy()

        let events = observer.all.filter { $0 != "recording" }
        // warning(1208): the helper finished as planned (FINISH {DONE}, issue 29: every FINISH is reported).
        #expect(events == ["recordBegin(0)", "screenCaptureStarted", "firstVideoFrame", "warning(1208)",
                           "screenCaptureStopped(0)", "recordComplete(0)"], "\(observer.all)")
        #expect(observer.all.contains("recording"))
        let probe = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                      "stream=codec_name,width,height", "-of", "csv=p=0", path])
        #expect(probe.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,320,240")
    }

    @Test(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"))
    func pushStatusGoesConnectingConnectSuccessDisconnected() throws {
        let runtime = privateRuntimeDirectory()
        let observer = Recorder()
        let pusher = try LivePusher(config: config(), observer: observer)
        try pusher.startScreenCapture(group: "push", runtimeDirectory: runtime)
        let key = UniqueName.make("sdkpush")
        #expect(pusher.startPush(url: try TestEnvironment.liveURL(key: key)) == 0)
        #expect(pusher.isPushing)
        #expect(pusher.pushURL?.hasSuffix("/live/****") == true)
        #expect(pusher.pushURL?.contains(key) == false)
        #expect(waitUntil(timeoutSeconds: 15) { observer.all.contains("push(2)") }, "\(observer.all)")
        pusher.stopPush()
        #expect(!pusher.isPushing)
        pusher.destroy()
        #expect(observer.all.filter { $0.hasPrefix("push(") } == ["push(1)", "push(2)", "push(0)"], "\(observer.all)")
    }

    @Test(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"))
    func reconnectPushGoesThroughReconnectingAndRestartPushStartsAgain() throws {
        let runtime = privateRuntimeDirectory()
        let observer = Recorder()
        let pusher = try LivePusher(config: config(), observer: observer)
        try pusher.startScreenCapture(group: "again", runtimeDirectory: runtime)
        #expect(pusher.startPush(url: try TestEnvironment.liveURL(key: UniqueName.make("again"))) == 0)
        func published() -> Int { observer.all.filter { $0 == "push(2)" }.count }
        #expect(waitUntil(timeoutSeconds: 15) { published() == 1 }, "\(observer.all)")
        pusher.reconnectPush()
        #expect(waitUntil(timeoutSeconds: 15) { published() == 2 }, "\(observer.all)")
        #expect(pusher.restartPush() == 0)
        #expect(waitUntil(timeoutSeconds: 15) { published() == 3 }, "\(observer.all)")
        pusher.destroy()
        #expect(observer.all.filter { $0.hasPrefix("push(") }
            == ["push(1)", "push(2)", "push(3)", "push(2)", "push(0)", "push(1)", "push(2)", "push(0)"], "\(observer.all)")
    }

    @Test func hardwareEncoderWithoutItsGPUFallsBackToLibx264WithAWarning() throws {
        let runtime = privateRuntimeDirectory()
        let observer = Recorder()
        var config = config()
        config.encoder = .nvenc  // no NVIDIA GPU on a test machine
        let pusher = try LivePusher(config: config, observer: observer)
        try pusher.startScreenCapture(group: "fallback", runtimeDirectory: runtime)
        pusher.destroy()
        #expect(observer.all.contains("warning(1204)"), "\(observer.all)")
    }

    @Test func recordingErrorsUseTheReferenceCodes() throws {
        let runtime = privateRuntimeDirectory()
        let observer = Recorder()
        let pusher = try LivePusher(config: config(), observer: observer)
        #expect(pusher.startLocalRecording(path: "/tmp/never.mp4") == -1)  // no screen capture yet
        try pusher.startScreenCapture(group: "codes", runtimeDirectory: runtime)
        let existing = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("exists")).path + ".mp4"
        FileManager.default.createFile(atPath: existing, contents: Data([0]))
        defer { try? FileManager.default.removeItem(atPath: existing) }
        #expect(pusher.startLocalRecording(path: "/tmp/x.avi") == -2)
        #expect(pusher.startLocalRecording(path: existing) == -7)
        #expect(pusher.startLocalRecording(path: "/proc/x.mp4") == -8)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("ok")).path + ".mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(pusher.startLocalRecording(path: path) == 0)
        #expect(pusher.startLocalRecording(path: path + ".flv") == -6)
        pusher.destroy()
        #expect(observer.all.prefix(6) == ["recordBegin(-1)", "recordBegin(-2)", "recordBegin(-7)", "recordBegin(-8)",
                                           "recordBegin(0)", "recordBegin(-6)"])
    }

    @Test(.timeLimit(.minutes(10)))
    func stoppingBeforeTheFirstPictureCompletesWithMinus3AndLeavesNoFile() throws {
        let runtime = privateRuntimeDirectory()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("short")).path + ".mp4"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let observer = Recorder()
        var config = config()
        config.fps = 1  // the first frame is encoded half a second after the start
        let pusher = try LivePusher(config: config, observer: observer)
        try pusher.startScreenCapture(group: UniqueName.make("short"), runtimeDirectory: runtime)
        #expect(pusher.startLocalRecording(path: path) == 0)
        pusher.stopLocalRecording()
        #expect(observer.completed.wait(timeout: .now() + 5) == .success)
        pusher.destroy()
        #expect(observer.all == ["recordBegin(0)", "recordComplete(\(LocalRecordingCode.nothingRecorded))"], "\(observer.all)")
        #expect(!FileManager.default.fileExists(atPath: path), "the empty recording was left behind")
    }

    @Test(.timeLimit(.minutes(10)))
    func recordingProgressIsOffByDefault() throws {
        let runtime = privateRuntimeDirectory()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("quiet")).path + ".mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let observer = Recorder()
        let group = UniqueName.make("quiet")
        let pusher = try LivePusher(config: config(), observer: observer)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        #expect(pusher.startLocalRecording(path: path) == 0)
        let helper = try ProcessRunner.start(try Repository.cPatternHelper(), [
            "--group", group, "--size", "320x240", "--frames", "75",
        ], environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(helper.finish().exitCode == 0)
        pusher.stopLocalRecording()
        #expect(observer.completed.wait(timeout: .now() + 5) == .success)
        pusher.destroy()
        #expect(observer.all.contains("recordComplete(0)"), "\(observer.all)")
        #expect(!observer.all.contains("recording"), "onLocalRecording came without an interval: \(observer.all)")
    }

    /// Records on which queue each callback ran.
    final class QueueChecker: LivePusherObserver, @unchecked Sendable {
        static let key = DispatchSpecificKey<String>()
        let lock = NSLock()
        var onQueue = 0, elsewhere: [String] = []
        private func check(_ name: String) {
            let here = DispatchQueue.getSpecific(key: Self.key) == "mine"
            lock.withLock { if here { onQueue += 1 } else { elsewhere.append(name) } }
        }
        func onScreenCaptureStarted() { check("screenCaptureStarted") }
        func onCaptureFirstVideoFrame() { check("firstVideoFrame") }
        func onStatisticsUpdate(_ statistics: LivePusherStatistics) { check("statistics") }
        func onScreenCaptureStopped(reason: Int32) { check("screenCaptureStopped") }
        func onLocalRecordBegin(code: Int32, storagePath: String) { check("recordBegin") }
        func onLocalRecordComplete(code: Int32, storagePath: String) { check("recordComplete") }
    }

    @Test(.timeLimit(.minutes(10)))
    func everyCallbackRunsOnTheCallbackQueueGiven() throws {
        let runtime = privateRuntimeDirectory()
        let queue = DispatchQueue(label: "test.callbacks")
        queue.setSpecific(key: QueueChecker.key, value: "mine")
        let observer = QueueChecker()
        let group = UniqueName.make("queue")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("queue")).path + ".mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let pusher = try LivePusher(config: config(), observer: observer, callbackQueue: queue)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        #expect(pusher.startLocalRecording(path: path) == 0)
        let helper = try ProcessRunner.start(try Repository.cPatternHelper(), [
            "--group", group, "--size", "320x240", "--frames", "45",
        ], environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(helper.finish().exitCode == 0)
        let deadline = Date().addingTimeInterval(5)
        while observer.lock.withLock({ observer.onQueue }) < 5 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        pusher.stopLocalRecording()
        pusher.destroy()
        let (onQueue, elsewhere) = observer.lock.withLock { (observer.onQueue, observer.elsewhere) }
        #expect(onQueue >= 6, "\(onQueue) callbacks on the queue given")
        #expect(elsewhere.isEmpty, "callbacks elsewhere: \(elsewhere)")
        #expect(pusher.statistics.width == 320, "the statistics getter reads the last figures")
    }

    @Test(.timeLimit(.minutes(10)))
    func pauseBeforeCaptureStartsShowsThePausePictureFromTheStart() throws {
        let pusher = try LivePusher(config: config())
        pusher.pause()
        try pusher.startScreenCapture(group: UniqueName.make("paused"), runtimeDirectory: privateRuntimeDirectory())
        let shown = pusher.placeholderShown
        pusher.resume()
        let afterResume = pusher.placeholderShown
        pusher.destroy()
        #expect(shown == "paused", "pause() before startScreenCapture was lost: \(shown ?? "nil")")
        #expect(afterResume == nil)
    }
}
