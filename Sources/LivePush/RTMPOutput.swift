import FLV
import Foundation
import Media
import RTMP

/// Push status, as the reference SDK numbers it.
public enum PushStatus: Int32, Sendable {
    case disconnected = 0
    case connecting = 1
    case connectSuccess = 2
    case reconnecting = 3
}

/// One RTMP destination: a bounded queue filled by the video pipeline and a sender thread that
/// connects, publishes, reconnects (every `retryIntervalMs`, `retryCount` times) and always
/// restarts on a keyframe with fresh sequence headers. When the queue holds more than
/// `maxQueuedMs` of video (the network is slower than the encoder), it drops frames up to the
/// next keyframe rather than let latency grow; keyframes are never dropped.
final class RTMPOutput: EncodedVideoSink, @unchecked Sendable {
    let url: RTMPURL
    private let decoderConfiguration: [UInt8]
    private let metadata: [(String, AMF0Value)]
    private let retryIntervalMs: Int
    private let retryCount: Int
    private let maxQueuedMs: Int64 = 3000
    private let condition = NSCondition()
    private var queue: [(packet: EncodedVideoPacket, ptsMs: Int64)] = []
    private var droppingUntilKeyframe = false
    private var stopped = false
    private var finished = false
    /// Set by `reconnect()`: the sender drops its connection and connects again.
    private var reconnectRequested = false
    private(set) var framesDropped = 0
    private(set) var bytesSent = 0
    var onStatus: (@Sendable (PushStatus, String) -> Void)?
    var onFailure: (@Sendable (String) -> Void)?
    /// Called when a (re)connection needs a keyframe to start on.
    var onNeedKeyframe: (@Sendable () -> Void)?

    init(url: RTMPURL, encoder: H264Encoder, retryIntervalMs: Int, retryCount: Int) throws(MediaError) {
        guard let record = AVC.decoderConfigurationRecord(annexBExtradata: encoder.extradata) else {
            throw .ffmpeg(call: "SPS/PPS from the encoder", code: -1, message: "the encoder gave no SPS and PPS")
        }
        self.url = url
        decoderConfiguration = record
        let settings = encoder.settings
        metadata = [
            ("width", .number(Double(settings.width))), ("height", .number(Double(settings.height))),
            ("framerate", .number(Double(settings.fps))), ("videocodecid", .number(7)),
            ("videodatarate", .number(Double(settings.bitrateKbps))), ("encoder", .string("LivePush")),
        ]
        self.retryIntervalMs = retryIntervalMs
        self.retryCount = retryCount
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "livepush-rtmp"
        thread.start()
    }

    /// Stops sending; the publisher says FCUnpublish and deleteStream and closes.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    /// Drops the connection and connects again at once (reconnectPush).
    func reconnect() {
        condition.lock()
        reconnectRequested = true
        condition.broadcast()
        condition.unlock()
    }

    func receive(_ packet: EncodedVideoPacket, ptsMs: Int64) {
        condition.lock()
        defer { condition.unlock() }
        if droppingUntilKeyframe && !packet.isKeyframe {
            framesDropped += 1
            return
        }
        droppingUntilKeyframe = false
        if let oldest = queue.first, ptsMs - oldest.ptsMs > maxQueuedMs {
            // Congested: keep keyframes' successors out until the next keyframe.
            framesDropped += queue.count
            queue.removeAll()
            if !packet.isKeyframe {
                droppingUntilKeyframe = true
                framesDropped += 1
                return
            }
        }
        queue.append((packet, ptsMs))
        condition.signal()
    }

    private func run() {
        defer {
            condition.lock()
            finished = true
            condition.broadcast()
            condition.unlock()
        }
        var attempts = 0
        var baseMs: Int64?
        while !isStopped {
            onStatus?(attempts == 0 ? .connecting : .reconnecting, attempts == 0
                ? "connecting to \(url)" : "reconnecting to \(url) (attempt \(attempts) of \(retryCount))")
            do throws(RTMPError) {
                let publisher = try RTMPPublisher(url: url)
                onStatus?(.connectSuccess, "publishing to \(url)")
                onNeedKeyframe?()
                attempts = 0
                try publisher.sendMetadata(metadata)
                try publisher.sendVideo(FLV.avcSequenceHeaderBody(decoderConfigurationRecord: decoderConfiguration),
                                        timestampMs: 0)
                try sendLoop(publisher, baseMs: &baseMs)
                publisher.finish()
                onStatus?(.disconnected, "stopped pushing to \(url)")
                return
            } catch {
                if isStopped { break }
                if error.detail == Self.reconnectRequestedDetail {
                    attempts = 1  // a requested reconnection: at once, counted as the first retry
                    continue
                }
                attempts += 1
                if attempts > retryCount || error.step == .publish {
                    onFailure?("push to \(url) failed: \(error)")
                    onStatus?(.disconnected, "gave up on \(url): \(error)")
                    return
                }
                condition.lock()
                _ = condition.wait(until: Date().addingTimeInterval(Double(retryIntervalMs) / 1000))
                condition.unlock()
            }
        }
        onStatus?(.disconnected, "stopped pushing to \(url)")
    }

    private static let reconnectRequestedDetail = "reconnection requested"

    private var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    /// Sends queued packets until stopped; a (re)connection starts at a keyframe.
    private func sendLoop(_ publisher: RTMPPublisher, baseMs: inout Int64?) throws(RTMPError) {
        var waitingForKeyframe = true
        while true {
            condition.lock()
            while queue.isEmpty && !stopped && !reconnectRequested { condition.wait() }
            if stopped {
                condition.unlock()
                return
            }
            if reconnectRequested {
                reconnectRequested = false
                condition.unlock()
                publisher.finish()
                throw RTMPError(step: .send, detail: Self.reconnectRequestedDetail)
            }
            let batch = queue
            queue.removeAll()
            condition.unlock()
            for (packet, ptsMs) in batch {
                if waitingForKeyframe {
                    guard packet.isKeyframe else { continue }
                    waitingForKeyframe = false
                }
                if baseMs == nil { baseMs = ptsMs }
                let timestampMs = UInt32(clamping: max(0, ptsMs - baseMs!))
                let body = FLV.avcVideoBody(lengthPrefixedNALUnits: AVC.lengthPrefixed(annexB: packet.data),
                                            isKeyframe: packet.isKeyframe, compositionTimeMs: 0)
                try publisher.sendVideo(body, timestampMs: timestampMs)
                bytesSent += body.count
            }
        }
    }
}
