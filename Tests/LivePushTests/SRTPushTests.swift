import Foundation
import LivePush
import Testing
import TestSupport

/// SRT through the LivePusher SDK to a real receiver (`ffmpeg -i 'srt://...?mode=listener'`),
/// directly and through UDP proxies that drop or throttle; what ffmpeg kept is decoded.
@Suite(.timeLimit(.minutes(10)))
struct SRTPushTests {
    typealias Recorder = PushNetworkTests.Recorder
    private let network = PushNetworkTests()
    private static let passphrase = "correct-horse-battery"

    /// Pushes to `url` for `seconds`, then stops; the observer and the pusher's last figures.
    private func push(_ url: String, seconds: Double, config: LivePushConfig? = nil,
                      during: ((Recorder) -> Void)? = nil) throws -> Recorder {
        let observer = Recorder()
        let (pusher, helper) = try network.startPusher(config ?? network.config(), observer: observer)
        #expect(pusher.startPush(url: url) == 0)
        #expect(waitUntil(timeoutSeconds: 10) { observer.all.contains("push(2)") }, "\(observer.all)")
        Thread.sleep(forTimeInterval: seconds)  // the length of the stream under test, not a wait for state
        during?(observer)
        pusher.stopPush()
        helper.stop()
        pusher.destroy()
        return observer
    }

    /// ffmpeg's decode of the whole file: its error lines (none for a clean stream).
    private func decodeErrors(_ path: String) throws -> String {
        let result = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path] + MediaProbe.nullOutput)
        #expect(result.exitCode == 0, "\(result)")
        return result.standardError
    }

    @Test func anEncryptedStreamArrivesAndDecodesWithItsToneAndSRTFigures() throws {
        let listener = try SRTListener(passphrase: Self.passphrase)
        let streamID = UniqueName.make("sid")
        let observer = try push(listener.callerURL("streamid=\(streamID)&passphrase=\(Self.passphrase)"), seconds: 4)
        let received = listener.finish()
        #expect(!received.timedOut, "\(received)")
        let stream = try MediaProbe.videoStream(listener.outputPath)
        #expect(stream["codec_name"] == "h264" && stream["width"] == "320" && stream["height"] == "240", "\(stream)")
        #expect(stream["r_frame_rate"] == "30/1", "\(stream)")
        let frames = Int(stream["nb_read_frames"] ?? "") ?? 0
        #expect(frames >= 100, "ffmpeg kept \(frames) frames of about 120")
        let samples = Array(try AudioAnalysis.decodeMono(listener.outputPath).dropFirst(48000))
        let hz = AudioAnalysis.dominantFrequencyHz(samples, sampleRateHz: 48000)
        #expect(abs(hz - 440) < 5, "the tone arrived at \(hz) Hz")
        #expect(try decodeErrors(listener.outputPath).isEmpty)
        let figures = observer.figures
        #expect(figures.contains { $0.srtSendRateKbps > 0 }, "\(figures.map(\.srtSendRateKbps))")
        #expect(figures.contains { $0.sendBitrateKbps > 0 })
        #expect(!observer.text.contains(streamID) && !observer.text.contains(Self.passphrase), "\(observer.text)")
        #expect(observer.text.contains("streamid=****&passphrase=****"), "\(observer.text)")
    }

    @Test func aWrongPassphraseIsAClearErrorWithoutRetries() throws {
        let listener = try SRTListener(passphrase: Self.passphrase)
        let observer = Recorder()
        let (pusher, helper) = try network.startPusher(network.config(), observer: observer)
        #expect(pusher.startPush(url: listener.callerURL("passphrase=wrong-passphrase-1")) == 0)
        let ended = waitUntil(timeoutSeconds: 20) { observer.all.last == "push(0)" }
        helper.stop()
        pusher.destroy()
        #expect(ended, "\(observer.all)")
        #expect(observer.all == ["push(1)", "error(\(LivePushErrorCode.pushPassphraseRejected))", "push(0)"],
                "\(observer.all)")
        #expect(observer.text.contains("refused the passphrase"), "\(observer.text)")
        #expect(!observer.text.contains("wrong-passphrase-1"))
    }

    @Test func aMissingPassphraseSaysToAddOne() throws {
        let listener = try SRTListener(passphrase: Self.passphrase)
        let observer = Recorder()
        let (pusher, helper) = try network.startPusher(network.config(), observer: observer)
        #expect(pusher.startPush(url: listener.callerURL()) == 0)
        #expect(waitUntil(timeoutSeconds: 20) { observer.all.last == "push(0)" }, "\(observer.all)")
        helper.stop()
        pusher.destroy()
        #expect(observer.all.contains("error(\(LivePushErrorCode.pushPassphraseRejected))"), "\(observer.all)")
        #expect(observer.text.contains("add passphrase="), "\(observer.text)")
    }

    @Test func noListenerIsATimeoutRetriedThenGivenUp() throws {
        let observer = Recorder()
        var config = network.config()
        config.connectRetryCount = 1
        let (pusher, helper) = try network.startPusher(config, observer: observer)
        #expect(pusher.startPush(url: "srt://127.0.0.1:\(try freeUDPPort())?latency=120") == 0)
        let ended = waitUntil(timeoutSeconds: 30) { observer.all.last == "push(0)" }
        helper.stop()
        pusher.destroy()
        #expect(ended, "\(observer.all)")
        #expect(observer.all.filter { !$0.hasPrefix("push(") }
            == ["warning(\(LivePushWarningCode.pushReconnecting))", "error(\(LivePushErrorCode.pushTimedOut))"],
                "\(observer.all)")
    }

    @Test func aListenerThatDiesAndComesBackIsReconnectedTo() throws {
        let first = try SRTListener()
        let observer = Recorder()
        let (pusher, helper) = try network.startPusher(network.config(), observer: observer)
        #expect(pusher.startPush(url: first.callerURL("latency=120")) == 0)
        #expect(waitUntil(timeoutSeconds: 10) { observer.all.contains("push(2)") }, "\(observer.all)")
        first.kill()
        // SRT hears nothing from a dead peer: the connection breaks after its 5 s idle timeout.
        #expect(waitUntil(timeoutSeconds: 30) { observer.all.contains("push(3)") }, "\(observer.all)")
        let second = try SRTListener(port: first.port)
        let resumed = waitUntil(timeoutSeconds: 20) { observer.all.filter { $0.hasPrefix("push(") }.suffix(1) == ["push(2)"] }
        let frames = { Int((try? MediaProbe.videoStream(second.outputPath))?["nb_read_frames"] ?? "") ?? 0 }
        let grew = waitUntil(timeoutSeconds: 10, intervalSeconds: 0.5) { frames() >= 30 }
        pusher.stopPush()
        helper.stop()
        pusher.destroy()
        _ = second.finish()
        #expect(resumed && grew, "\(observer.all); the second listener kept \(frames()) frames")
        #expect(observer.all.contains("warning(\(LivePushWarningCode.pushReconnecting))"), "\(observer.all)")
        #expect(!observer.all.contains { $0.hasPrefix("error(") }, "\(observer.all)")
    }

    @Test func fivePercentLossIsRetransmittedAndTheReceiverDecodesWithoutErrors() throws {
        let listener = try SRTListener()
        let proxy = try UDPProxy(targetPort: listener.port, dropPercent: 5)
        defer { proxy.close() }
        let observer = try push("srt://127.0.0.1:\(proxy.port)?latency=200", seconds: 5)
        _ = listener.finish()
        let counts = proxy.forwardedAndDropped
        #expect(counts.dropped > 50, "the proxy dropped only \(counts.dropped) of \(counts.forwarded) datagrams")
        // Induction and conclusion, each way: the handshake went through whole (UDPProxy spares it).
        #expect(proxy.handshakesForwarded >= 4, "\(proxy.handshakesForwarded) handshake packets")
        let retransmitted = observer.figures.reduce(0) { $0 + $1.srtPacketsRetransmitted }
        #expect(retransmitted > 0, "SRT retransmitted nothing")
        #expect(try decodeErrors(listener.outputPath).isEmpty)
        let frames = Int(try MediaProbe.videoStream(listener.outputPath)["nb_read_frames"] ?? "") ?? 0
        #expect(frames >= 120, "ffmpeg kept \(frames) frames of about 150")
    }

    /// Issue 35 item 6: `delayMs` is the connection's round trip (SRT's own msRTT), not the send
    /// queue's wait. A path whose way back is 150 ms long (the proxy holds every datagram from the
    /// receiver that long) shows a round trip of about 150 ms, while the queue waits a few ms.
    @Test func delayMsIsTheRoundTripOfAPathWithALongWayBack() throws {
        let listener = try SRTListener(latencyMs: 400)
        let proxy = try UDPProxy(targetPort: listener.port, returnDelayMs: 150)
        defer { proxy.close() }
        let observer = try push("srt://127.0.0.1:\(proxy.port)?latency=400", seconds: 6)
        _ = listener.finish()
        // The last seconds: SRT's smoothed RTT has left its 100 ms starting value by then.
        let late = observer.figures.filter { $0.sendBitrateKbps > 0 }.suffix(3)
        #expect(late.count == 3, "\(observer.figures.map(\.delayMs))")
        #expect(late.allSatisfy { (150...260).contains($0.delayMs) }, "delayMs \(late.map(\.delayMs)) for a 150 ms way back")
        #expect(late.allSatisfy { $0.delayMs == $0.srtRttMs }, "one measurement: \(late.map { ($0.delayMs, $0.srtRttMs) })")
        #expect(late.allSatisfy { $0.queueDelayMs < 100 }, "the queue's own wait: \(late.map(\.queueDelayMs))")
        let frames = Int(try MediaProbe.videoStream(listener.outputPath)["nb_read_frames"] ?? "") ?? 0
        #expect(frames >= 100, "the receiver kept \(frames) frames of about 180")
    }

    @Test func aThrottledPathLowersTheBitrateAndItClimbsAfter() throws {
        let listener = try SRTListener()
        let proxy = try UDPProxy(targetPort: listener.port, rateKbps: 600, queueMs: 300)
        defer { proxy.close() }
        var config = network.config(targetKbps: 1500, minKbps: 300)
        config.autoBitrate = true
        let observer = Recorder()
        let (pusher, helper) = try network.startPusher(config, observer: observer)
        #expect(pusher.startPush(url: "srt://127.0.0.1:\(proxy.port)") == 0)
        #expect(waitUntil(timeoutSeconds: 10) { observer.all.contains("push(2)") }, "\(observer.all)")
        ReceivedThrottle.throttleThenFree(pusher, helper) { proxy.rateKbps = 0 }
        _ = listener.finish()
        let lost = observer.figures.map(\.srtPacketsLost)
        #expect(lost.reduce(0, +) > 0, "the throttled path lost nothing: \(lost)")
        #expect(observer.all.contains("warning(\(LivePushWarningCode.networkBusy))"), "\(observer.all)")
        // What the listener wrote: video kbps per second of stream time (ffprobe's packet sizes),
        // from the first second with video (the TS muxer starts its clock above zero).
        let kbps = Array(try MediaProbe.videoKbpsPerSecond(listener.outputPath).drop { $0 == 0 })
        print("SRT throttle test: video kbps per second at the listener: \(kbps)")
        ReceivedThrottle(kbps: kbps, throttleKbps: 600, throttledSeconds: 4..<9, stepKbps: 150)
            .expectFallsAndRecovers("SRT at the listener")
    }
}
