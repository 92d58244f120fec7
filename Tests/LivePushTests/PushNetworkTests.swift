import Foundation
import LivePush
import Testing
import TestSupport

/// Pushing through a bad network to the real nginx-rtmp of the test environment: a throttling
/// proxy on loopback, a server that restarts, a key already in use, names that do not resolve.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct PushNetworkTests {
    final class Recorder: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var events: [String] = []
        var statistics: [LivePusherStatistics] = []
        var messages: [String] = []
        func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String]) {
            lock.withLock { events.append("push(\(status.rawValue))"); messages.append(message) }
        }
        func onError(code: Int32, message: String, extraInfo: [String: String]) {
            lock.withLock { events.append("error(\(code))"); messages.append(message) }
        }
        func onWarning(code: Int32, message: String, extraInfo: [String: String]) {
            // The push's warnings: not those of the test's helper finishing (FINISH {USER}, 1208) or pausing.
            guard !(LivePushWarningCode.helperPaused...LivePushWarningCode.helperFinished).contains(code) else { return }
            lock.withLock { events.append("warning(\(code))"); messages.append(message) }
        }
        func onStatisticsUpdate(_ figures: LivePusherStatistics) { lock.withLock { statistics.append(figures) } }
        var networkChanges: [String] = []
        func onNetworkPoor() { lock.withLock { networkChanges.append("poor") } }
        func onNetworkRecovered() { lock.withLock { networkChanges.append("recovered") } }
        var network: [String] { lock.withLock { networkChanges } }
        var all: [String] { lock.withLock { events } }
        var figures: [LivePusherStatistics] { lock.withLock { statistics } }
        var text: String { lock.withLock { messages.joined(separator: "\n") } }
    }

    func config(targetKbps: Int = 1500, minKbps: Int = 300) -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 30
        config.qualityMode = .custom
        config.targetVideoBitrateKbps = targetKbps
        config.minVideoBitrateKbps = minKbps
        config.initialVideoBitrateKbps = targetKbps
        config.connectRetryIntervalMs = 1000
        config.connectRetryCount = 10
        return config
    }

    /// A pusher fed by a helper with changing pictures and a 440 Hz tone.
    func startPusher(_ config: LivePushConfig, observer: Recorder) throws -> (LivePusher, SignalHelper) {
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("net")
        let pusher = try LivePusher(config: config, observer: observer)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let helper = SignalHelper(group: group, runtime: runtime, picture: { UInt8(Int($0 * 600) % 256) },
                                  sound: { 0.25 * Float(sin(2 * Double.pi * 440 * $0)) })
        helper.start()
        return (pusher, helper)
    }

    /// Audio and video packet times (ms) of an FLV nginx recorded.
    func packetTimesMs(_ path: String, stream: String) throws -> [Int] {
        let result = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries",
                                                       "packet=pts", "-of", "csv=p=0", path])
        return result.standardOutput.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The frames of `encoded` (a local recording's video timestamps, ms) that `received` (a
    /// destination's, on a clock that differs by a constant) lacks over the stretch it covers. The
    /// offset is the one that leaves the fewest missing; timestamps match within 1 ms (rounding).
    static func framesMissing(from received: [Int], of encoded: [Int]) -> [Int] {
        guard let first = received.first, let last = received.last else { return encoded }
        let have = Set(received)
        func missing(offset: Int) -> [Int] {
            encoded.map { $0 + offset }.filter { time in
                time >= first && time <= last && !(time - 1...time + 1).contains { have.contains($0) }
            }
        }
        return encoded.map { first - $0 }.map(missing).min { $0.count < $1.count } ?? encoded
    }

    private func rtmpPort() throws -> UInt16 {
        UInt16(try TestEnvironment.value("LIVEPUSH_TEST_RTMP_URL", of: .rtmp).split(separator: ":").last ?? "") ?? 0
    }

    @Test func throttledUplinkDropsVideoLowersTheBitrateKeepsAudioAndRecovers() throws {
        let proxy = try ThrottlingProxy(targetPort: try rtmpPort(), rateKbps: 500)
        defer { proxy.close() }
        let observer = Recorder()
        let (pusher, helper) = try startPusher(config(), observer: observer)
        let key = UniqueName.make("slow")
        #expect(pusher.startPush(url: "rtmp://127.0.0.1:\(proxy.port)/record/\(key)") == 0)
        var throttled: [LivePusherStatistics] = []
        ReceivedThrottle.throttleThenFree(pusher, helper) {
            throttled = observer.figures
            proxy.rateKbps = 0
        }

        let lowest = throttled.map(\.encoderBitrateKbps).filter { $0 > 0 }.min() ?? 0
        #expect(lowest < 1000 && lowest >= 300, "the bitrate went down to \(lowest) kbps (min 300): \(throttled.map(\.encoderBitrateKbps))")
        #expect(throttled.map(\.framesDropped).reduce(0, +) > 0 || lowest < 700, "neither drops nor a lower bitrate")
        #expect(!throttled.isEmpty && throttled.map(\.queueMs).max() ?? 0 < 4000,
                "the queue stays bounded: \(throttled.map(\.queueMs))")
        #expect(observer.all.contains("warning(\(LivePushWarningCode.networkBusy))"), "\(observer.all)")
        let final = observer.figures.last?.encoderBitrateKbps ?? 0
        #expect(final > lowest, "after the network recovered the bitrate climbed from \(lowest) to \(final) kbps")
        // At nginx: the video bitrate under the throttle, and after it (stream time, from the FLV's
        // video tags), and a clean decode of every dropped-up-to-the-next-keyframe stretch.
        let file = try TestEnvironment.closedRecording(key: key)
        let kbps = FLVTagReader.videoKbpsPerWindow(try FLVTagReader.tags(file))
        print("throttle test: video kbps per second at nginx: \(kbps)")
        #expect(kbps.count >= 19, "nginx recorded \(kbps.count) s of video: \(kbps)")
        #expect(kbps.first ?? 0 >= 1000, "the first second at nginx was not near the initial 1500 kbps: \(kbps)")
        // Seconds 4-8 under the 500 kbps throttle. Auto bitrate climbs a tenth of the target (150
        // kbps) every 3 s: after it more than the throttle lets through, and at least a step above
        // the throttled rate over the last 4 whole seconds.
        ReceivedThrottle(kbps: kbps, throttleKbps: 500, throttledSeconds: 4..<9, stepKbps: 150)
            .expectFallsAndRecovers("RTMP at nginx")
        #expect(try MediaProbe.decodeErrors(file) == "", "nginx's recording does not decode cleanly")
        // Audio never dropped: nginx recorded every AAC frame, 1024 samples (21.3 ms) apart.
        let audio = try packetTimesMs(file, stream: "a:0")
        let gaps = zip(audio, audio.dropFirst()).map { $1 - $0 }
        #expect(audio.count > 500, "\(audio.count) audio packets for about 21 s")
        #expect(gaps.allSatisfy { (20...23).contains($0) }, "audio gaps: \(gaps.filter { !(20...23).contains($0) })")
    }

    @Test func aThrottledDestinationDoesNotHoldBackTheOther() throws {
        let proxy = try ThrottlingProxy(targetPort: try rtmpPort(), rateKbps: 300)
        defer { proxy.close() }
        let observer = Recorder()
        var config = config(targetKbps: 800, minKbps: 600)  // auto bitrate cannot fit 300 kbps: the slow one drops
        config.autoBitrate = true
        let (pusher, helper) = try startPusher(config, observer: observer)
        let fastKey = UniqueName.make("fast"), slowKey = UniqueName.make("slow")
        // Every frame the encoder made: a local recording gets them all. Ticks the pipeline skips
        // when the machine is behind (its timestamps stay on the clock) are missing from every output.
        let encodedPath = NSTemporaryDirectory() + "\(fastKey)-encoded.flv"
        defer { try? FileManager.default.removeItem(atPath: encodedPath) }
        #expect(pusher.startLocalRecording(path: encodedPath) == 0)
        #expect(pusher.startPush(url: try TestEnvironment.recordURL(key: fastKey)) == 0)
        #expect(pusher.addPushDestination(url: "rtmp://127.0.0.1:\(proxy.port)/record/\(slowKey)") == 0)
        Thread.sleep(forTimeInterval: 8)  // let it run: 8 s of both destinations (the frames each received are counted)
        pusher.stopPush()
        pusher.stopLocalRecording()
        helper.stop()
        pusher.destroy()
        let fastFile = try TestEnvironment.closedRecording(key: fastKey)
        let slowFile = try TestEnvironment.closedRecording(key: slowKey)
        let fast = try packetTimesMs(fastFile, stream: "v:0")
        let slow = try packetTimesMs(slowFile, stream: "v:0")
        let encoded = try packetTimesMs(encodedPath, stream: "v:0")
        #expect(fast.count >= 200, "the fast destination got \(fast.count) frames of about 240")
        let missing = Self.framesMissing(from: fast, of: encoded)
        #expect(encoded.count >= fast.count && missing.isEmpty,
                "the fast destination lacks \(missing.count) of the \(encoded.count) frames: \(missing.prefix(10))")
        #expect(slow.count < fast.count * 3 / 4, "the slow one dropped: \(slow.count) vs \(fast.count) frames")
        // 300 kbps for about 8 s holds a few seconds of 320x240 video: the slow one got pictures,
        // and each stretch dropped up to the next keyframe decodes without an error.
        #expect(slow.count >= 30, "the slow destination received \(slow.count) frames")
        #expect(try MediaProbe.decodeErrors(slowFile) == "")
        #expect(try MediaProbe.decodeErrors(fastFile) == "")
    }

    @Test func aNetworkUnderTheMinimumBitrateShowsThePoorNetworkPictureUntilItRecovers() throws {
        let proxy = try ThrottlingProxy(targetPort: try rtmpPort(), rateKbps: 120)
        defer { proxy.close() }
        let observer = Recorder()
        var config = config(targetKbps: 600, minKbps: 300)
        config.networkPoorAfterMs = 1000
        let (pusher, helper) = try startPusher(config, observer: observer)
        let key = UniqueName.make("poor")
        #expect(pusher.startPush(url: "rtmp://127.0.0.1:\(proxy.port)/record/\(key)") == 0)
        let shown = waitUntil(timeoutSeconds: 15, intervalSeconds: 0.1) { pusher.placeholderShown == "networkPoor" }
        Thread.sleep(forTimeInterval: 3)  // let it run: 3 s of the poor-network picture under the throttle
        proxy.rateKbps = 0
        let recovered = waitUntil(timeoutSeconds: 15, intervalSeconds: 0.1) { pusher.placeholderShown == nil }
        Thread.sleep(forTimeInterval: 2)  // let it run: 2 s of the screen after the recovery (the live pictures measured)
        pusher.stopPush()
        helper.stop()
        pusher.destroy()
        #expect(shown && recovered, "the pusher showed the poor-network picture: \(shown), took it away: \(recovered)")
        // The lifecycle pair (issue 35): once each, in that order, with the picture.
        #expect(observer.network == ["poor", "recovered"], "\(observer.network)")
        // At nginx: the helper's changing pictures, then the notice band ("Poor network" over the last
        // picture dimmed), then the changing pictures again to the end.
        let file = try TestEnvironment.closedRecording(key: key)
        let pictures = try ReceivedPictures.decode(file, width: 320)
        let notice = PlaceholderNotice().shown(in: pictures)
        var index = 0
        let runs = Self.runs(notice).map { run in
            defer { index += run.count }
            return "\(run.value ? "notice" : "screen") x\(run.count) from \(pictures.timesMs[index]) ms"
        }
        print("poor-network test: pictures at nginx: \(runs)")
        let first = try #require(notice.firstIndex(of: true), "no poor-network picture at nginx: \(runs)")
        let last = try #require(notice.lastIndex(of: true))
        #expect(first >= 15, "the screen before the notice: \(first) pictures; \(runs)")
        // Few pictures get through 120 kbps: a viewer sees each until the next arrives. The notice
        // stays from its first picture to the screen's return, over the 3 s the pusher held it.
        #expect(notice[first...last].allSatisfy { $0 }, "the notice came and went: \(runs)")
        let after = (last + 1)..<pictures.count
        #expect(after.count >= 30, "\(after.count) pictures after the last notice, fewer than 1 s: \(runs)")
        let noticeMs = after.isEmpty ? 0 : pictures.timesMs[after.lowerBound] - pictures.timesMs[first]
        #expect(noticeMs >= 2500, "the poor-network picture was seen for \(noticeMs) ms of stream: \(runs)")
        // The screen back: the helper's grey steps 20 a frame, so consecutive pictures differ.
        let changing = zip(after, after.dropFirst()).filter {
            abs(pictures.meanLuma($0) - pictures.meanLuma($1)) >= 4
        }.count
        #expect(changing >= after.count * 3 / 4, "\(changing) of \(after.count) pictures after the notice changed")
        #expect(try MediaProbe.decodeErrors(file) == "", "nginx's recording does not decode cleanly")
    }

    /// `values` as runs of equal values, in order.
    static func runs(_ values: [Bool]) -> [(value: Bool, count: Int)] {
        values.reduce(into: []) { runs, value in
            if runs.last?.value == value { runs[runs.count - 1].count += 1 } else { runs.append((value, 1)) }
        }
    }

    @Test func serverRestartIsSurvivedAndTheStreamResumes() throws {
        let nginx = try PrivateNginx()
        let observer = Recorder()
        let (pusher, helper) = try startPusher(config(), observer: observer)
        let key = UniqueName.make("restart")
        #expect(pusher.startPush(url: nginx.rtmpURL + "/record/\(key)") == 0)
        Thread.sleep(forTimeInterval: 2)  // let it run: 2 s published before the server goes
        nginx.stop()
        Thread.sleep(forTimeInterval: 2.5)  // let it run: 2.5 s with the server down (the retries)
        try nginx.start()
        var resumed = false
        for _ in 0..<100 where !resumed {  // within 10 s
            Thread.sleep(forTimeInterval: 0.1)
            resumed = observer.all.filter { $0.hasPrefix("push(") }.suffix(1) == ["push(2)"]
                && observer.all.contains("push(3)")
        }
        Thread.sleep(forTimeInterval: 3)  // let it run: 3 s of stream after the restart (what the file after it holds)
        pusher.stopPush()
        helper.stop()
        pusher.destroy()
        let pushes = observer.all.filter { $0.hasPrefix("push(") }
        #expect(resumed, "\(observer.all)")
        #expect(pushes.first == "push(1)" && pushes.dropFirst().first == "push(2)" && pushes.last == "push(0)", "\(pushes)")
        #expect(observer.all.contains("warning(\(LivePushWarningCode.pushReconnecting))"), "\(observer.all)")
        #expect(!observer.all.contains { $0.hasPrefix("error(") }, "\(observer.all)")
        // What nginx recorded after the restart plays: video and audio, about 3 s.
        let file = nginx.recordDirectory + "/\(key).flv"
        let video = try packetTimesMs(file, stream: "v:0"), audio = try packetTimesMs(file, stream: "a:0")
        #expect(video.count >= 60 && audio.count >= 100, "\(video.count) video, \(audio.count) audio packets")
        #expect(try MediaProbe.decodeErrors(file) == "", "the stream after the reconnect does not decode cleanly")
    }

    @Test func aSecondPublisherOnAKeyInUseIsRejectedWithoutRetries() throws {
        let key = UniqueName.make("taken")
        let first = Recorder(), second = Recorder()
        let (pusherA, helperA) = try startPusher(config(), observer: first)
        #expect(pusherA.startPush(url: try TestEnvironment.liveURL(key: key)) == 0)
        #expect(waitUntil(timeoutSeconds: 15) { first.all.contains("push(2)") },
                "the first never published: \(first.all)")
        let (pusherB, helperB) = try startPusher(config(), observer: second)
        #expect(pusherB.startPush(url: try TestEnvironment.liveURL(key: key)) == 0)
        #expect(waitUntil(timeoutSeconds: 15) { second.all.contains("push(0)") },
                "the second never ended: \(second.all)")
        for (pusher, helper) in [(pusherA, helperA), (pusherB, helperB)] {
            helper.stop()
            pusher.destroy()
        }
        #expect(second.all.filter { !$0.hasPrefix("warning") } == ["push(1)", "error(\(LivePushErrorCode.pushRejected))", "push(0)"],
                "\(second.all)")
        #expect(second.text.contains("already in use"), "\(second.text)")
        #expect(!second.text.contains(key))
        #expect(!first.all.contains { $0.hasPrefix("error(") })
    }

    @Test(arguments: [
        ("rtmp://livepush-no-such-host.invalid/live/k", LivePushErrorCode.pushDNSFailed, "dnsFailed"),
        ("rtmp://127.0.0.1:9/live/k", LivePushErrorCode.pushConnectionRefused, "connectionRefused"),
    ])
    func unreachableServersGetTheirOwnCodes(url: String, code: Int32, cause: String) throws {
        let observer = Recorder()
        var config = config()
        config.connectRetryCount = 1
        let (pusher, helper) = try startPusher(config, observer: observer)
        #expect(pusher.startPush(url: url) == 0)
        #expect(waitUntil(timeoutSeconds: 30) { observer.all.contains("error(\(code))") }, "\(observer.all)")
        helper.stop()
        pusher.destroy()
        #expect(observer.all.filter { !$0.hasPrefix("push(") }
            == ["warning(\(LivePushWarningCode.pushReconnecting))", "error(\(code))"], "\(observer.all)")
        #expect(observer.text.contains(url.hasPrefix("rtmp://127") ? "connection refused" : "cannot resolve"))
    }
}
