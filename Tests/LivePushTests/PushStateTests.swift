import Foundation
import LivePush
import Testing
import TestSupport

/// The push lifecycle after a failure (docs/guide.md, "Push state"): what `isPushing`,
/// `reconnectPush`, `restartPush` and `onError` say once a destination gave up, checked against
/// a private nginx that is stopped and started again, and what it recorded.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct PushStateTests {
    final class Recorder: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var events: [String] = []
        func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String]) {
            // A give-up carries its cause (a stop does not): "push(0, connectionRefused)".
            lock.withLock { events.append("push(\(status.rawValue)\(extraInfo["cause"].map { ", \($0)" } ?? ""))") }
        }
        func onError(code: Int32, message: String, extraInfo: [String: String]) {
            lock.withLock { events.append("error(\(code))") }
        }
        var all: [String] { lock.withLock { events } }
    }

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.qualityMode = .custom
        config.targetVideoBitrateKbps = 1000
        config.minVideoBitrateKbps = 300
        config.initialVideoBitrateKbps = 800
        config.connectRetryIntervalMs = 1000
        config.connectRetryCount = 0  // the first failure gives up
        return config
    }

    /// A pusher fed by a helper, pushing to a private nginx that is down: the push gives up.
    private func pusherThatGaveUp(_ observer: Recorder, key: String) throws -> (LivePusher, SignalHelper, PrivateNginx) {
        let nginx = try PrivateNginx()
        nginx.stop()
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("state")
        let pusher = try LivePusher(config: config(), observer: observer)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let helper = SignalHelper(group: group, runtime: runtime, picture: { UInt8(Int($0 * 600) % 256) },
                                  sound: { 0.25 * Float(sin(2 * Double.pi * 440 * $0)) })
        helper.start()
        #expect(pusher.startPush(url: nginx.rtmpURL + "/record/\(key)") == 0)
        // Not `isPushing` here: a refusal from 127.0.0.1 is immediate, so the sender thread can give up
        // before this thread reads it (it failed once so). The order of the events says it was live first.
        let refused = "error(\(LivePushErrorCode.pushConnectionRefused))"
        let gaveUp = waitUntil(timeoutSeconds: 5) { observer.all.contains("push(0, connectionRefused)") && !pusher.isPushing }
        #expect(gaveUp, "isPushing \(pusher.isPushing) after: \(observer.all)")
        #expect(observer.all == ["push(1)", refused, "push(0, connectionRefused)"], "connecting, refused, gave up")
        #expect(pusher.pushURLs.isEmpty)
        return (pusher, helper, nginx)
    }

    /// Waits until the destination publishes again, lets it run 2 s, and checks what nginx recorded.
    private func expectPublishedForTwoSeconds(_ pusher: LivePusher, _ observer: Recorder, _ nginx: PrivateNginx,
                                              key: String) throws
    {
        let published = waitUntil(timeoutSeconds: 10) { observer.all.last == "push(2)" && pusher.isPushing }
        #expect(published, "\(observer.all)")
        let deadline = Date().addingTimeInterval(2)
        while Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }  // 2 s of stream: what is measured
        let result = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_packets",
                                                       "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0",
                                                       nginx.recordDirectory + "/\(key).flv"])
        let packets = Int(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(packets >= 40, "nginx recorded \(packets) video packets in about 2 s (about 60)")
    }

    @Test(.timeLimit(.minutes(10)))
    func aDestinationThatGaveUpIsNotPushingAndReconnectPushStartsItAgain() throws {
        let observer = Recorder()
        let key = UniqueName.make("again")
        let (pusher, helper, nginx) = try pusherThatGaveUp(observer, key: key)
        defer { nginx.stop() }
        try nginx.start()
        #expect(pusher.reconnectPush() == 0)
        try expectPublishedForTwoSeconds(pusher, observer, nginx, key: key)
        pusher.stopPush()
        #expect(!pusher.isPushing)
        #expect(pusher.reconnectPush() == -1, "nothing to reconnect after stopPush")
        helper.stop()
        pusher.destroy()
    }

    @Test(.timeLimit(.minutes(10)))
    func restartPushStartsAGivenUpDestinationAgainAtTheInitialBitrate() throws {
        let observer = Recorder()
        let key = UniqueName.make("restart")
        let (pusher, helper, nginx) = try pusherThatGaveUp(observer, key: key)
        defer { nginx.stop() }
        #expect(pusher.setTargetVideoBitrate(kbps: 500) == 0)  // the encoder follows it down...
        #expect(pusher.setTargetVideoBitrate(kbps: 1000) == 0)  // ...and up at once: nothing is congested (issue 35)
        #expect(pusher.currentVideoBitrateKbps == 1000)
        try nginx.start()
        #expect(pusher.restartPush() == 0)
        #expect(pusher.currentVideoBitrateKbps == 800, "restartPush starts again at the initial bitrate")
        try expectPublishedForTwoSeconds(pusher, observer, nginx, key: key)
        helper.stop()
        pusher.destroy()
    }

    @Test(.timeLimit(.minutes(10)))
    func aRendezvousThatCannotBeMadeIsReportedToOnErrorAsWellAsThrown() throws {
        let observer = Recorder()
        let pusher = try LivePusher(config: config(), observer: observer)
        #expect(throws: LivePushError.self) {
            try pusher.startScreenCapture(group: "nowhere", runtimeDirectory: "/proc/livepush-no-such-dir")
        }
        pusher.destroy()
        #expect(observer.all == ["error(\(LivePushErrorCode.screenCaptureFailed))"], "\(observer.all)")
    }
}
