import Foundation
import LivePush
import Testing
import TestSupport

/// `onScreenCaptureStopped` reason 2, the captured display changed: the real `livepush-capture`
/// on a real PipeWire stream that grows past its session finishes with RESTARTING and comes
/// back; the pusher says 2, then started again.
@Suite(.enabled(if: TestEnvironment.isEnabled(.pipewire), "needs the test PipeWire (make test)"), .timeLimit(.minutes(10)))
struct ScreenCaptureStopReasonTests {
    final class Reasons: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var events: [String] = []
        func onScreenCaptureStarted() { lock.withLock { events.append("started") } }
        func onScreenCaptureStopped(reason: Int32) { lock.withLock { events.append("stopped(\(reason))") } }
        var all: [String] { lock.withLock { events } }
    }

    @Test func aStreamThatGrowsPastTheSessionIsReasonTwoAndTheHelperComesBack() throws {
        let source = try PipeWireVideoSource(["--size", "320x240", "--color", "00ff00"])
        defer { source.stop() }
        let observer = Reasons()
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("display")
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        let pusher = try LivePusher(config: config, observer: observer)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime, audio: false)
        let helper = try ProcessRunner.start(BuiltProducts.path("livepush-capture"),
                                             ["--group", group, "--source", "pipewire", "--target", source.name, "--no-cursor"],
                                             environment: ["XDG_RUNTIME_DIR": runtime].merging(try PipeWireVideoSource.environment()) { $1 })
        #expect(waitUntil(timeoutSeconds: 15) { observer.all == ["started"] }, "\(observer.all)")
        source.send("resize 640 480")
        #expect(waitUntil(timeoutSeconds: 15) { observer.all == ["started", "stopped(2)", "started"] }, "\(observer.all)")
        // The helper is ended by force: after its RESTARTING reconnect, livepush-capture --source
        // pipewire did not end on SIGINT here (reported, not part of what this test covers).
        helper.interrupt()
        if !waitUntil(timeoutSeconds: 5, { !helper.isRunning }) { kill(helper.processIdentifier, SIGKILL) }
        _ = helper.finish()
        pusher.destroy()
    }
}
