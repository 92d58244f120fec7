import Foundation
import LivePush
import Testing
import TestSupport

/// Issue 35, item 7: one state value (`pusherState`, `onStateChanged`, `status.state`) that follows a
/// real push to a private nginx through connecting, an outage of the server (reconnecting, with the
/// attempt and the wait in each status), its recovery, and a give-up; and the lifecycle callbacks of
/// pause, resume and the preview. (The poor-network pair is checked under a real throttle in
/// PushNetworkTests.)
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp) && TestEnvironment.isEnabled(.x11),
                "needs the test nginx-rtmp and Xvfb (make test)"), .timeLimit(.minutes(10)))
struct LifecycleCallbackTests {
    final class Recorder: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var states: [LivePusherState] = []
        var callbacks: [String] = []
        var reconnections: [[String: String]] = []
        func onStateChanged(_ state: LivePusherState) { lock.withLock { states.append(state) } }
        func onPushPaused() { lock.withLock { callbacks.append("paused") } }
        func onPushResumed() { lock.withLock { callbacks.append("resumed") } }
        func onPreviewStarted() { lock.withLock { callbacks.append("previewStarted") } }
        func onPreviewStopped() { lock.withLock { callbacks.append("previewStopped") } }
        func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String]) {
            guard status == .reconnecting else { return }
            lock.withLock { reconnections.append(extraInfo.merging(["message": message]) { $1 }) }
        }
        var stateList: [LivePusherState] { lock.withLock { states } }
        var callbackList: [String] { lock.withLock { callbacks } }
        var reconnectionList: [[String: String]] { lock.withLock { reconnections } }
    }

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.qualityMode = .custom
        config.targetVideoBitrateKbps = 1000
        config.minVideoBitrateKbps = 300
        config.initialVideoBitrateKbps = 800
        config.connectRetryIntervalMs = 1000
        config.connectRetryForMs = 8000  // the give-up at the end comes 8 s into its outage
        return config
    }

    @Test(.timeLimit(.minutes(10)))
    func theStateFollowsAPushThroughAnOutageItsRecoveryAndAGiveUp() throws {
        let nginx = try PrivateNginx()
        defer { nginx.stop() }
        let observer = Recorder()
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("life")
        let pusher = try LivePusher(config: config(), observer: observer)
        #expect(pusher.pusherState == .idle)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let helper = SignalHelper(group: group, runtime: runtime, picture: { UInt8(Int($0 * 600) % 256) },
                                  sound: { 0.25 * Float(sin(2 * Double.pi * 440 * $0)) })
        helper.start()
        defer { helper.stop() }
        #expect(waitUntil(timeoutSeconds: 5) { observer.stateList == [.capturing] }, "\(observer.stateList)")
        #expect(pusher.pusherState == .capturing && pusher.status.state == .capturing)

        let key = UniqueName.make("life")
        #expect(pusher.startPush(url: nginx.rtmpURL + "/record/\(key)") == 0)
        #expect(waitUntil(timeoutSeconds: 10) { observer.stateList.last == .pushing }, "\(observer.stateList)")
        #expect(observer.stateList == [.capturing, .connecting, .pushing])
        #expect(pusher.status.state == .pushing)

        // Pause and resume: one callback each (pausing twice changes nothing the second time).
        pusher.pause()
        pusher.pause()
        #expect(waitUntil(timeoutSeconds: 5) { observer.callbackList == ["paused"] }, "\(observer.callbackList)")
        #expect(pusher.status.paused)
        pusher.resume()
        #expect(waitUntil(timeoutSeconds: 5) { observer.callbackList == ["paused", "resumed"] }, "\(observer.callbackList)")
        // The preview window on the test's X server: opened, then closed.
        #expect(pusher.startPreview(PreviewConfig(display: try TestEnvironment.display())) == 0)
        #expect(waitUntil(timeoutSeconds: 5) { observer.callbackList.last == "previewStarted" }, "\(observer.callbackList)")
        pusher.stopPreview()
        #expect(waitUntil(timeoutSeconds: 5) { observer.callbackList.last == "previewStopped" }, "\(observer.callbackList)")
        #expect(observer.callbackList == ["paused", "resumed", "previewStarted", "previewStopped"])

        // The server goes away: reconnecting, the first wait 1 s, the second 2 s (each within a tenth).
        nginx.stop()
        #expect(waitUntil(timeoutSeconds: 10) { observer.reconnectionList.count >= 2 }, "\(observer.reconnectionList)")
        #expect(pusher.pusherState == .reconnecting && pusher.status.state == .reconnecting)
        #expect(pusher.status.destinations.first?.status == .reconnecting)
        try nginx.start()
        let firstTwo = Array(observer.reconnectionList.prefix(2))
        #expect(firstTwo.map { $0["attempt"] } == ["1", "2"], "\(firstTwo)")
        let waitsMs = firstTwo.compactMap { $0["nextRetryMs"].flatMap { Int($0) } }
        #expect(waitsMs.count == 2 && (900...1100).contains(waitsMs[0]) && (1800...2200).contains(waitsMs[1]), "\(firstTwo)")
        #expect(firstTwo.allSatisfy { $0["message"]?.contains("retrying for 8 s") == true }, "\(firstTwo)")

        // Back: publishing again, and nginx receives the stream anew (it opens KEY.flv again on publish).
        #expect(waitUntil(timeoutSeconds: 15) { observer.stateList.last == .pushing }, "\(observer.stateList)")
        #expect(observer.stateList == [.capturing, .connecting, .pushing, .reconnecting, .pushing])
        let received = nginx.recordDirectory + "/\(key).flv"
        let grew = waitUntil(timeoutSeconds: 15, intervalSeconds: 0.5) {
            ((try? ReceivedStream.packets(received, stream: "v:0")) ?? []).count >= 60
        }
        #expect(grew, "nginx received \(((try? ReceivedStream.packets(received, stream: "v:0")) ?? []).count) frames after the outage")

        // Stopped, then a push to the server while it is down: it gives up 8 s into the outage.
        pusher.stopPush()
        #expect(waitUntil(timeoutSeconds: 5) { observer.stateList.last == .capturing }, "\(observer.stateList)")
        nginx.stop()
        let startedAt = Date()
        #expect(pusher.startPush(url: nginx.rtmpURL + "/record/\(key)") == 0)
        #expect(waitUntil(timeoutSeconds: 20) { observer.stateList.last == .failed }, "\(observer.stateList)")
        let gaveUpAfterS = Date().timeIntervalSince(startedAt)
        #expect((7...12).contains(gaveUpAfterS), "gave up after \(gaveUpAfterS) s of an 8 s budget")
        #expect(pusher.pusherState == .failed && !pusher.isPushing)
        #expect(Array(observer.stateList.suffix(4)) == [.capturing, .connecting, .reconnecting, .failed],
                "\(observer.stateList)")
        pusher.destroy()
        #expect(observer.stateList.last == .idle, "destroy waits for the callbacks: \(observer.stateList)")
        #expect(pusher.pusherState == .idle)
    }
}
