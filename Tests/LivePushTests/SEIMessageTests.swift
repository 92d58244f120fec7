@testable import LivePush
import Foundation
import Testing
import TestSupport

/// SEI messages as the receivers get them: nginx-rtmp's recording of the push, an SRT receiver's
/// MPEG-TS and the local recording, read NAL unit by NAL unit (`H264AccessUnits`): each message in exactly its repeat
/// count of consecutive access units, the delayed one that much later, the keyframe-only one on
/// IDR pictures only, and the same access units in both.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct SEIMessageTests {
    final class Publishing: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var published = 0
        func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String]) {
            if status == .connectSuccess { lock.withLock { published += 1 } }
        }
        var destinationsPublishing: Int { lock.withLock { published } }
    }


    /// The access units that carry `text`, by index.
    private func carrying(_ text: String, _ units: [H264AccessUnit]) -> [Int] {
        units.indices.filter { units[$0].messages.contains(text) }
    }

    @Test func messagesReachNginxSRTAndTheRecordingWithTheirRepeatsDelayAndKeyframes() throws {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 30
        config.gopSeconds = 1
        let observer = Publishing()
        let runtime = privateRuntimeDirectory()
        let group = UniqueName.make("sei")
        let pusher = try LivePusher(config: config, observer: observer)
        #expect(pusher.sendMessage("too early", repeatCount: 1, delayMs: 0, keyFrameOnly: false) == -1)
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let helper = SignalHelper(group: group, runtime: runtime, picture: { UInt8(Int($0 * 600) % 256) }, sound: { _ in 0 })
        helper.start()
        let key = UniqueName.make("sei")
        let recordingPath = NSTemporaryDirectory() + "\(key).mp4"
        defer { try? FileManager.default.removeItem(atPath: recordingPath) }
        #expect(pusher.startPush(url: try TestEnvironment.recordURL(key: key)) == 0)
        let srt = try SRTListener()
        #expect(pusher.addPushDestination(url: srt.callerURL()) == 0)
        #expect(pusher.startLocalRecording(path: recordingPath) == 0)
        #expect(waitUntil(timeoutSeconds: 15) { observer.destinationsPublishing == 2 && pusher.statistics.fps > 0 })
        Thread.sleep(forTimeInterval: 1)  // let it run: 1 s of stream (a keyframe a second) before the messages
        #expect(pusher.sendMessage("", repeatCount: 1, delayMs: 0, keyFrameOnly: false) == LivePushErrorCode.invalidParameter)
        #expect(pusher.sendMessage("{\"q\":\"now\"}", repeatCount: 5, delayMs: 0, keyFrameOnly: false) == 0)
        #expect(pusher.sendMessage("later ✓", repeatCount: 3, delayMs: 1500, keyFrameOnly: false) == 0)
        #expect(pusher.sendMessage("keyframes", repeatCount: 2, delayMs: 0, keyFrameOnly: true) == 0)
        let sent = waitUntil(timeoutSeconds: 10) { pusher.pipeline?.sei.pendingCount == 0 }
        #expect(sent, "every message went into its frames")
        // Those frames reach nginx: its file grows 1 s of stream past what it had when they were made.
        let nginxFile = try TestEnvironment.recordedFile(key: key).path
        func receivedMs() -> Int { ((try? FLVTagReader.lastVideoMs(nginxFile)) ?? nil) ?? 0 }
        let madeAtMs = receivedMs()
        #expect(waitUntil(timeoutSeconds: 15) { receivedMs() >= madeAtMs + 1000 },
                "nginx's file stays at \(madeAtMs) ms")
        pusher.stopPush()
        pusher.stopLocalRecording()
        helper.stop()
        pusher.destroy()
        let srtEnd = srt.finish()
        #expect(!srtEnd.timedOut, "\(srtEnd)")

        let received = try H264AccessUnits.read(try TestEnvironment.recordedFile(key: key).path, uuid: LivePushSEI.uuid)
        let recorded = try H264AccessUnits.read(recordingPath, uuid: LivePushSEI.uuid)
        let overSRT = try H264AccessUnits.read(srt.outputPath, uuid: LivePushSEI.uuid)
        for (name, units) in [("nginx", received), ("recording", recorded), ("srt", overSRT)] {
            let now = carrying("{\"q\":\"now\"}", units), later = carrying("later ✓", units)
            let keyframes = carrying("keyframes", units)
            #expect(now.count == 5 && now == Array((now.first ?? 0)..<(now.first ?? 0) + 5), "\(name): \(now)")
            #expect(later.count == 3 && later == Array((later.first ?? 0)..<(later.first ?? 0) + 3), "\(name): \(later)")
            #expect(keyframes.count == 2 && keyframes.allSatisfy { units[$0].isKeyframe }, "\(name): \(keyframes)")
            #expect(keyframes.count == 2 && keyframes[1] - keyframes[0] == 30, "\(name): repeats a GOP (30 frames) apart: \(keyframes)")
            #expect(carrying("too early", units).isEmpty, "\(name): a refused message is not sent")
            if let first = now.first, let delayed = later.first {
                let delayS = units[delayed].timeS - units[first].timeS
                #expect((1.4...1.7).contains(delayS), "\(name): the delayed message came \(delayS) s after the first")
            }
            let other = units.filter { !$0.messages.isEmpty }.count
            #expect(other == Set(now + later + keyframes).count, "\(name): no other access unit carries a message")
        }
        // The same access units, in the same order, reached both (by the pattern of messages).
        let pattern = { (units: [H264AccessUnit]) in units.filter { !$0.messages.isEmpty }.map(\.messages) }
        #expect(pattern(received) == pattern(recorded) && pattern(overSRT) == pattern(recorded))
    }
}
