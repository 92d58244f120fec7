import Foundation
import LivePush
import Testing
import TestSupport

/// RTMPS through the LivePusher SDK against the real TLS fronts of the test environment: every
/// certificate problem reaches `onError` with its own code and is not retried; a TLS front that
/// restarts is survived.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmps), "needs the test TLS front (make test)"), .timeLimit(.minutes(10)))
struct RTMPSPushTests {
    typealias Recorder = PushNetworkTests.Recorder
    private let network = PushNetworkTests()

    /// Pushes to `url` until the push ends (it gives up) or `timeoutSeconds` pass; the events.
    private func pushUntilItGivesUp(_ url: String, caFile: String?, retryCount: Int = 2,
                                    timeoutSeconds: Double = 20) throws -> Recorder {
        let observer = Recorder()
        var config = network.config()
        config.connectRetryCount = retryCount
        config.caFile = caFile
        let (pusher, helper) = try network.startPusher(config, observer: observer)
        #expect(pusher.startPush(url: url) == 0)
        let ended = waitUntil(timeoutSeconds: timeoutSeconds) { observer.all.last == "push(0)" }
        helper.stop()
        pusher.destroy()
        #expect(ended, "the push did not give up: \(observer.all)")
        return observer
    }

    @Test(.timeLimit(.minutes(10)), arguments: [
        (TestEnvironment.TLSFront.good, false, LivePushErrorCode.pushCertificateUntrusted),
        (TestEnvironment.TLSFront.untrusted, true, LivePushErrorCode.pushCertificateUntrusted),
        (TestEnvironment.TLSFront.wrongName, true, LivePushErrorCode.pushCertificateNameMismatch),
        (TestEnvironment.TLSFront.expired, true, LivePushErrorCode.pushCertificateExpired),
    ])
    func certificateProblemsGetTheirOwnCodeAndNoRetries(front: TestEnvironment.TLSFront, withCA: Bool,
                                                        code: Int32) throws {
        let key = UniqueName.make("cert")
        let observer = try pushUntilItGivesUp(try TestEnvironment.rtmpsURL(front, key: key),
                                              caFile: withCA ? try TestEnvironment.testCAFile() : nil)
        #expect(observer.all == ["push(1)", "error(\(code))", "push(0)"], "\(observer.all)")
        #expect(!observer.text.contains(key), "\(observer.text)")
        #expect(observer.text.contains("rtmps://127.0.0.1:"), "\(observer.text)")
    }

    @Test(.timeLimit(.minutes(10))) func plainRTMPBehindRTMPSIsNotTLSAndNotRetried() throws {
        let plain = try TestEnvironment.value("LIVEPUSH_TEST_RTMP_URL", of: .rtmp)
        let observer = try pushUntilItGivesUp(plain.replacingOccurrences(of: "rtmp://", with: "rtmps://") + "/live/k",
                                              caFile: try TestEnvironment.testCAFile())
        #expect(observer.all == ["push(1)", "error(\(LivePushErrorCode.pushNotTLS))", "push(0)"], "\(observer.all)")
        #expect(observer.text.contains("plain RTMP server (use rtmp:// and its port)"), "\(observer.text)")
    }

    @Test(.timeLimit(.minutes(10))) func aFailedHandshakeIsRetriedThenGivenUp() throws {
        let observer = try pushUntilItGivesUp(try TestEnvironment.rtmpsURL(.oldTLS, key: "k"),
                                              caFile: try TestEnvironment.testCAFile(), retryCount: 1)
        #expect(observer.all.filter { !$0.hasPrefix("push(") }
            == ["warning(\(LivePushWarningCode.pushReconnecting))", "error(\(LivePushErrorCode.pushTLSHandshakeFailed))"],
                "\(observer.all)")
    }

    @Test(.timeLimit(.minutes(10))) func aCAFileThatIsNotPEMIsRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("ca")).path
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let observer = try pushUntilItGivesUp(try TestEnvironment.rtmpsURL(key: "k"), caFile: path)
        #expect(observer.all == ["push(1)", "error(\(LivePushErrorCode.pushCAFileUnreadable))", "push(0)"],
                "\(observer.all)")
    }

    @Test(.timeLimit(.minutes(10))) func aThrottledTLSUplinkLowersTheBitrateAndItClimbsAfter() throws {
        let rtmpsPort = UInt16(try TestEnvironment.value("LIVEPUSH_TEST_RTMPS_PORT", of: .rtmps)) ?? 0
        let proxy = try ThrottlingProxy(targetPort: rtmpsPort, rateKbps: 500)
        defer { proxy.close() }
        let observer = Recorder()
        var config = network.config()
        config.caFile = try TestEnvironment.testCAFile()
        let (pusher, helper) = try network.startPusher(config, observer: observer)
        let key = UniqueName.make("slowtls")
        #expect(pusher.startPush(url: "rtmps://127.0.0.1:\(proxy.port)/record/\(key)") == 0)
        ReceivedThrottle.throttleThenFree(pusher, helper) { proxy.rateKbps = 0 }
        #expect(observer.all.contains("warning(\(LivePushWarningCode.networkBusy))"), "\(observer.all)")
        #expect(!observer.all.contains { $0.hasPrefix("error(") }, "\(observer.all)")
        // At nginx, behind the TLS front: video kbps per second of stream time under the throttle
        // and after it, as the RTMP throttle test measures it.
        let file = try TestEnvironment.closedRecording(key: key)
        let kbps = FLVTagReader.videoKbpsPerWindow(try FLVTagReader.tags(file))
        print("TLS throttle test: video kbps per second at nginx: \(kbps)")
        ReceivedThrottle(kbps: kbps, throttleKbps: 500, throttledSeconds: 4..<9, stepKbps: 150)
            .expectFallsAndRecovers("RTMPS at nginx")
        #expect(try MediaProbe.decodeErrors(file) == "", "nginx's recording does not decode cleanly")
    }

    @Test(.timeLimit(.minutes(10))) func aRestartedTLSFrontIsSurvivedAndTheStreamResumesOverTLS() throws {
        let front = try PrivateTLSFront()
        let observer = Recorder()
        var config = network.config()
        config.caFile = try TestEnvironment.testCAFile()
        let (pusher, helper) = try network.startPusher(config, observer: observer)
        let key = UniqueName.make("tlsrestart")
        #expect(pusher.startPush(url: front.url(key: key)) == 0)
        #expect(waitUntil(timeoutSeconds: 10) { observer.all.contains("push(2)") }, "\(observer.all)")
        front.stop()
        #expect(waitUntil(timeoutSeconds: 10) { observer.all.contains("push(3)") }, "\(observer.all)")
        try front.start()
        let resumed = waitUntil(timeoutSeconds: 15) {
            observer.all.filter { $0.hasPrefix("push(") }.suffix(1) == ["push(2)"]
        }
        // 3 s of stream after the restart, counted in what nginx recorded.
        let file = try TestEnvironment.recordedFile(key: key).path
        let grew = waitUntil(timeoutSeconds: 15, intervalSeconds: 0.5) { ((try? network.packetTimesMs(file, stream: "v:0")) ?? []).count >= 90 }
        pusher.stopPush()
        helper.stop()
        pusher.destroy()
        #expect(resumed, "\(observer.all)")
        #expect(grew, "nginx recorded \((try? network.packetTimesMs(file, stream: "v:0").count) ?? 0) frames after the restart")
        #expect(observer.all.contains("warning(\(LivePushWarningCode.pushReconnecting))"), "\(observer.all)")
        #expect(!observer.all.contains { $0.hasPrefix("error(") }, "\(observer.all)")
        let stream = try MediaProbe.videoStream(file)
        #expect(stream["codec_name"] == "h264" && stream["width"] == "320" && stream["height"] == "240", "\(stream)")
    }
}
