import CaptureLink
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

/// What one destination's sender measured since the last look (`RTMPOutput.takeFigures`).
struct RTMPOutputFigures: Sendable {
    /// Buffered media in the queue right now, by timestamps (newest minus oldest).
    var queuedMs = 0
    /// Bytes of FLV bodies written to the socket in the interval, and the interval's length.
    var bytesSent = 0
    var intervalMs = 0
    /// Time from a packet's arrival to its write finishing: mean and standard deviation.
    var delayMs = 0
    var jitterMs = 0
    /// Video frames dropped in the interval because the network could not keep up.
    var framesDropped = 0
    var isPublishing = false

    /// What the network carried in the interval, kbps.
    var sendRateKbps: Int { intervalMs > 0 ? bytesSent * 8 / intervalMs : 0 }
}

/// What one destination carried since it started (`RTMPOutput.totals`).
struct RTMPOutputTotals: Sendable {
    var publishedMs = 0
    var bytesSent: Int64 = 0
}

/// One RTMP destination: a bounded queue fed by the pipelines and a sender thread that
/// connects, publishes, reconnects (every `retryIntervalMs`, `retryCount` times) and always
/// restarts on a keyframe with fresh sequence headers.
///
/// Congestion (the network is slower than the encoder): when the queue holds more than
/// `dropThresholdMs` of media, queued video P-frames are dropped and so is incoming video up to
/// the next keyframe, as OBS does. Keyframes and audio are never dropped for congestion; only
/// when the queue passes `maxQueuedBytes` (a connection that barely moves, until the send
/// timeout declares it lost) does the oldest media go, so memory stays bounded.
final class RTMPOutput: EncodedMediaSink, @unchecked Sendable {
    let url: RTMPURL
    private let decoderConfiguration: [UInt8]
    private let audioSpecificConfig: [UInt8]?
    private let metadata: [(String, AMF0Value)]
    private let retryIntervalMs: Int
    private let retryCount: Int
    let dropThresholdMs: Int
    /// A quarter of a second of the stream at its target rates (32 KiB to 512 KiB).
    private let sendBufferBytes: Int
    private let maxQueuedBytes = 32 * 1024 * 1024
    private let condition = NSCondition()
    private var queue: [QueuedPacket] = []
    private var queuedBytes = 0
    private var droppingUntilKeyframe = false
    /// True while a connection publishes: media that arrives otherwise is not queued.
    private var publishing = false
    private var stopped = false
    private var finished = false
    /// The connection in use, to break it when stopping takes too long.
    private var currentPublisher: RTMPPublisher?
    /// Set by `reconnect()`: the sender drops its connection and connects again.
    private var reconnectRequested = false
    private var figures = RTMPOutputFigures()
    private var figuresSinceNs = MonotonicClock.nowNs()
    private var totalBytesSent: Int64 = 0
    private var publishedNs: UInt64 = 0
    /// Since when the current connection publishes, while one does.
    private var publishingSinceNs: UInt64?
    private var delaySumMs = 0.0, delaySquareSumMs = 0.0, delayCount = 0
    var onStatus: (@Sendable (PushStatus, String) -> Void)?
    /// A connection attempt failed and another follows (the error, the attempt number).
    var onRetry: (@Sendable (RTMPError, Int) -> Void)?
    /// Pushing ended for good: the server refused, or reconnecting ran out of retries.
    var onFailure: (@Sendable (RTMPError) -> Void)?
    /// Called when a (re)connection needs a keyframe to start on.
    var onNeedKeyframe: (@Sendable () -> Void)?
    /// Called (on a pipeline thread) when congestion starts dropping video.
    var onCongestion: (@Sendable (Int) -> Void)?

    private struct QueuedPacket {
        enum Media {
            case video(EncodedVideoPacket)
            case audio(EncodedAudioPacket)
        }
        let media: Media
        let ptsMs: Int64
        let arrivalNs: UInt64
        var bytes: Int {
            switch media {
            case .video(let packet): packet.data.count
            case .audio(let packet): packet.data.count
            }
        }
        var isDroppableVideo: Bool {
            if case .video(let packet) = media { return !packet.isKeyframe }
            return false
        }
    }

    init(url: RTMPURL, encoder: H264Encoder, audioEncoder: AACEncoder?, retryIntervalMs: Int, retryCount: Int,
         dropThresholdMs: Int = 2000) throws(MediaError)
    {
        guard let record = AVC.decoderConfigurationRecord(annexBExtradata: encoder.extradata) else {
            throw .ffmpeg(call: "SPS/PPS from the encoder", code: -1, message: "the encoder gave no SPS and PPS")
        }
        self.url = url
        decoderConfiguration = record
        audioSpecificConfig = audioEncoder?.audioSpecificConfig
        let settings = encoder.settings
        var metadata: [(String, AMF0Value)] = [
            ("width", .number(Double(settings.width))), ("height", .number(Double(settings.height))),
            ("framerate", .number(Double(settings.fps))), ("videocodecid", .number(7)),
            ("videodatarate", .number(Double(settings.bitrateKbps))), ("encoder", .string("LivePush")),
        ]
        if let audio = audioEncoder?.settings {
            metadata += [("audiocodecid", .number(10)), ("audiosamplerate", .number(Double(audio.sampleRateHz))),
                         ("audiosamplesize", .number(16)), ("stereo", .boolean(audio.channels == 2)),
                         ("audiodatarate", .number(Double(audio.bitrateKbps)))]
        }
        self.metadata = metadata
        let streamKbps = settings.bitrateKbps + (audioEncoder?.settings.bitrateKbps ?? 0)
        sendBufferBytes = max(32 * 1024, min(512 * 1024, streamKbps * 1000 / 8 / 4))
        self.retryIntervalMs = retryIntervalMs
        self.retryCount = retryCount
        self.dropThresholdMs = dropThresholdMs
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "livepush-rtmp"
        thread.start()
    }

    /// Stops sending; the publisher says FCUnpublish and deleteStream and closes. A sender
    /// still blocked after `graceMs` (a stalled network or server) has its connection broken.
    func stop(graceMs: Int = 1000) {
        condition.lock()
        stopped = true
        condition.broadcast()
        let deadline = Date().addingTimeInterval(Double(graceMs) / 1000)
        while !finished && condition.wait(until: deadline) {}
        if !finished { currentPublisher?.abort() }
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

    /// The figures since the previous call.
    func takeFigures() -> RTMPOutputFigures {
        condition.lock()
        defer { condition.unlock() }
        let nowNs = MonotonicClock.nowNs()
        var result = figures
        result.intervalMs = Int((nowNs - figuresSinceNs) / 1_000_000)
        result.queuedMs = queuedDurationMs
        result.isPublishing = publishing
        if delayCount > 0 {
            let mean = delaySumMs / Double(delayCount)
            result.delayMs = Int(mean.rounded())
            result.jitterMs = Int(max(0, delaySquareSumMs / Double(delayCount) - mean * mean).squareRoot().rounded())
        }
        figures = RTMPOutputFigures()
        figuresSinceNs = nowNs
        delaySumMs = 0
        delaySquareSumMs = 0
        delayCount = 0
        return result
    }

    /// Time published and bytes sent since the start, over every connection.
    var totals: RTMPOutputTotals {
        condition.lock()
        defer { condition.unlock() }
        let currentNs = publishingSinceNs.map { MonotonicClock.nowNs() - $0 } ?? 0
        return RTMPOutputTotals(publishedMs: Int((publishedNs + currentNs) / 1_000_000), bytesSent: totalBytesSent)
    }

    private var queuedDurationMs: Int {
        guard let first = queue.first, let last = queue.last else { return 0 }
        return Int(max(0, last.ptsMs - first.ptsMs))
    }

    func receive(_ packet: EncodedVideoPacket, ptsMs: Int64) {
        condition.lock()
        defer { condition.unlock() }
        guard publishing else { return }
        if droppingUntilKeyframe && !packet.isKeyframe {
            dropVideo(1)
            return
        }
        droppingUntilKeyframe = false
        enqueue(QueuedPacket(media: .video(packet), ptsMs: ptsMs, arrivalNs: MonotonicClock.nowNs()))
        if queuedDurationMs > dropThresholdMs {
            // Congested: the P-frames go (the queue's and the incoming ones up to the next keyframe).
            let before = queue.count
            queue.removeAll { $0.isDroppableVideo }
            queuedBytes = queue.reduce(0) { $0 + $1.bytes }
            droppingUntilKeyframe = true
            let dropped = before - queue.count
            dropVideo(dropped)
            onCongestion?(dropped)
        }
    }

    func receiveAudio(_ packet: EncodedAudioPacket, ptsMs: Int64) {
        condition.lock()
        defer { condition.unlock() }
        guard publishing, audioSpecificConfig != nil else { return }
        enqueue(QueuedPacket(media: .audio(packet), ptsMs: ptsMs, arrivalNs: MonotonicClock.nowNs()))
    }

    /// Called with the lock held.
    private func enqueue(_ packet: QueuedPacket) {
        queue.append(packet)
        queuedBytes += packet.bytes
        while queuedBytes > maxQueuedBytes, !queue.isEmpty {
            let oldest = queue.removeFirst()
            queuedBytes -= oldest.bytes
            if case .video = oldest.media { dropVideo(1); droppingUntilKeyframe = true }
        }
        condition.signal()
    }

    private func dropVideo(_ count: Int) {
        figures.framesDropped += count
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
                let publisher = try RTMPPublisher(url: url, sendBufferBytes: sendBufferBytes)
                condition.lock()
                currentPublisher = publisher
                condition.unlock()
                defer {
                    condition.lock()
                    currentPublisher = nil
                    condition.unlock()
                }
                try publisher.sendMetadata(metadata)
                try publisher.sendVideo(FLV.avcSequenceHeaderBody(decoderConfigurationRecord: decoderConfiguration),
                                        timestampMs: 0)
                if let audioSpecificConfig {
                    try publisher.sendAudio(FLV.aacSequenceHeaderBody(audioSpecificConfig: audioSpecificConfig),
                                            timestampMs: 0)
                }
                setPublishing(true)
                onStatus?(.connectSuccess, "publishing to \(url)")
                onNeedKeyframe?()
                attempts = 0
                defer { setPublishing(false) }
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
                if attempts > retryCount || error.kind == .rejected {
                    onFailure?(error)
                    onStatus?(.disconnected, "gave up on \(url): \(error)")
                    return
                }
                onRetry?(error, attempts)
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

    private func setPublishing(_ value: Bool) {
        condition.lock()
        publishing = value
        let nowNs = MonotonicClock.nowNs()
        if let since = publishingSinceNs { publishedNs += nowNs - since }
        publishingSinceNs = value ? nowNs : nil
        queue.removeAll()
        queuedBytes = 0
        droppingUntilKeyframe = false
        condition.unlock()
    }

    /// Sends queued packets until stopped; a (re)connection starts at a keyframe, and audio
    /// joins from there.
    private func sendLoop(_ publisher: RTMPPublisher, baseMs: inout Int64?) throws(RTMPError) {
        var waitingForKeyframe = true
        var keyframePtsMs: Int64 = 0
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
            let packet = queue.removeFirst()
            queuedBytes -= packet.bytes
            condition.unlock()
            let body: [UInt8]
            let isVideo: Bool
            switch packet.media {
            case .video(let video):
                if waitingForKeyframe {
                    guard video.isKeyframe else { continue }
                    waitingForKeyframe = false
                    keyframePtsMs = packet.ptsMs
                }
                body = FLV.avcVideoBody(lengthPrefixedNALUnits: AVC.lengthPrefixed(annexB: video.data),
                                        isKeyframe: video.isKeyframe, compositionTimeMs: 0)
                isVideo = true
            case .audio(let audio):
                guard !waitingForKeyframe, packet.ptsMs >= keyframePtsMs else { continue }
                body = FLV.aacFrameBody(audio.data)
                isVideo = false
            }
            if baseMs == nil { baseMs = packet.ptsMs }
            let timestampMs = UInt32(clamping: max(0, packet.ptsMs - baseMs!))
            if isVideo {
                try publisher.sendVideo(body, timestampMs: timestampMs)
            } else {
                try publisher.sendAudio(body, timestampMs: timestampMs)
            }
            let delayMs = Double(MonotonicClock.nowNs() - packet.arrivalNs) / 1e6
            condition.lock()
            figures.bytesSent += body.count
            totalBytesSent += Int64(body.count)
            delaySumMs += delayMs
            delaySquareSumMs += delayMs * delayMs
            delayCount += 1
            condition.unlock()
        }
    }
}
