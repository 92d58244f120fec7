import Foundation
import LivePush
import Media
import Testing
import TestSupport

/// The SDK's live status, per-source mute, snapshots, its version and its log level.
@Suite(.timeLimit(.minutes(10))) struct StatusAndLogLevelTests {
    /// Measures the mixed audio (after volumes and mute) that is about to be encoded.
    final class MixMeter: LivePusherObserver, @unchecked Sendable {
        private let lock = NSLock()
        private var energies: [Double] = []
        func onProcessAudioFrame(_ frame: inout AudioFrame) {
            let energy = frame.samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, frame.samples.count))
            lock.withLock { energies.append(energy) }
        }
        /// The mean square of the frames mixed since the last call.
        func take() -> Double {
            lock.withLock {
                defer { energies = [] }
                return energies.isEmpty ? -1 : energies.reduce(0, +) / Double(energies.count)
            }
        }
    }

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 30
        return config
    }

    private func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return condition()
    }

    @Test func theVersionIsASemanticVersion() {
        #expect(LivePush.version.split(separator: ".").count == 3)
        #expect(LivePush.version.split(separator: ".").allSatisfy { Int($0) != nil }, "\(LivePush.version)")
    }

    @Test func ffmpegsOwnLogLevelFollowsSetLogLevel() {
        defer { LivePush.setLogLevel(.info); LibraryLogLevel.error.apply() }
        LivePush.setLogLevel(.debug)
        #expect(LivePush.logLevel == .debug && LivePush.libraryLogLevel == "debug")
        LivePush.setLogLevel(.quiet)
        #expect(LivePush.logLevel == .quiet && LivePush.libraryLogLevel == "quiet")
        LivePush.setLogLevel(.info)
        #expect(LivePush.logLevel == .info && LivePush.libraryLogLevel == "warning")
        LivePush.setLogLevel(.error)
        #expect(LivePush.libraryLogLevel == "error")
    }

    @Test(.timeLimit(.minutes(10)))
    func mutingOneSourceSilencesItAndStatusSaysSo() throws {
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("mute")
        let meter = MixMeter()
        let pusher = try LivePusher(config: config(), observer: meter)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let helper = SignalHelper(group: group, runtime: runtime, picture: { _ in 128 },
                                  sound: { 0.25 * Float(sin(2 * Double.pi * 440 * $0)) })
        helper.start()
        defer {
            helper.stop()
            pusher.destroy()
        }
        // The statistics carry the level as sent: a -15 dBFS tone is about 75 of 100.
        #expect(waitFor(15) { (65...85).contains(pusher.status.statistics.desktopLevel) },
                "\(pusher.status.statistics)")
        _ = meter.take()
        Thread.sleep(forTimeInterval: 0.5)  // let it run: the 0.5 s of mix measured
        let loud = meter.take()
        #expect(pusher.status.statistics.micLevel == 0, "no microphone started")
        pusher.setMute(true, source: .desktop)
        // The helper's sound is the mix's only source: with it muted nothing is heard, and `muted` says so.
        #expect(pusher.status.mutedSources == [.desktop] && pusher.status.muted)
        #expect(waitFor(3) { pusher.status.statistics.desktopLevel == 0 }, "muted: \(pusher.status.statistics)")
        Thread.sleep(forTimeInterval: 0.3)  // let it run: 0.3 s, past the 50 ms mix delay (chunks mixed before)
        _ = meter.take()
        Thread.sleep(forTimeInterval: 0.5)  // let it run: the 0.5 s of mix measured
        let muted = meter.take()
        pusher.setMute(false, source: .desktop)
        #expect(pusher.status.mutedSources.isEmpty)
        Thread.sleep(forTimeInterval: 0.3)  // let it run: 0.3 s, past the 50 ms mix delay (chunks mixed before)
        _ = meter.take()
        Thread.sleep(forTimeInterval: 0.5)  // let it run: the 0.5 s of mix measured
        let back = meter.take()
        #expect(loud > 0.01, "the desktop tone (0.25 amplitude) mixed: \(loud)")
        #expect(muted == 0, "muted desktop audio is silence: \(muted)")
        #expect(back > 0.01, "unmuted again: \(back)")
    }

    @Test(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    func statusFollowsPushPauseBitrateAndDestinationsAndASnapshotIsAJPEG() throws {
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("status")
        let pusher = try LivePusher(config: config())
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let helper = SignalHelper(group: group, runtime: runtime, picture: { UInt8(Int($0 * 300) % 256) }, sound: { _ in 0 })
        helper.start()
        defer {
            helper.stop()
            pusher.destroy()
        }
        let key = UniqueName.make("statuskey")
        #expect(pusher.startPush(url: try TestEnvironment.liveURL(key: key)) == 0)
        #expect(waitFor(10) { pusher.status.destinations.first?.status == .connectSuccess }, "\(pusher.status)")
        var status = pusher.status
        #expect(status.capturing && status.pushing && !status.paused)
        #expect(status.destinations.count == 1 && status.destinations[0].url.hasSuffix("/live/****"))
        #expect(!status.destinations[0].url.contains(key))
        #expect(waitFor(3) { pusher.status.destinations.first?.bytesSent ?? 0 > 0 }, "per-destination figures")

        pusher.pause()
        #expect(waitFor(2) { pusher.status.placeholder == "paused" })
        #expect(pusher.status.paused)
        #expect(pusher.setTargetVideoBitrate(kbps: 400) == 0)
        status = pusher.status
        #expect(status.targetVideoBitrateKbps == 400 && status.currentVideoBitrateKbps == 400, "\(status)")

        let jpeg = try #require(pusher.snapshotJPEG())
        #expect(Array(jpeg.prefix(3)) == [0xFF, 0xD8, 0xFF])
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("snap") + ".jpg").path
        try Data(jpeg).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let stream = try MediaProbe.videoStream(path)
        #expect(stream["codec_name"] == "mjpeg" && stream["width"] == "320" && stream["height"] == "240", "\(stream)")

        #expect(pusher.removePushDestination(index: 3) == LivePushErrorCode.invalidParameter)
        #expect(pusher.removePushDestination(index: 0) == 0)
        status = pusher.status
        #expect(status.destinations.isEmpty && !status.pushing && status.capturing)
    }
}
