import CaptureLink
import FLV
import Foundation
import LinuxSystem
import Media
import RTMP
import SRT

/// Push status, as the reference SDK numbers it.
public enum PushStatus: Int32, Sendable {
    case disconnected = 0
    case connecting = 1
    case connectSuccess = 2
    case reconnecting = 3
}

/// What one destination's sender measured since the last look (`PushOutput.takeFigures`).
struct PushOutputFigures: Sendable {
    /// Buffered media in the queue right now: its video frames times the frame interval (not its
    /// timestamps' span, which a stall of the pusher widens without anything waiting longer).
    var queuedMs = 0
    /// Bytes of FLV bodies written to the socket in the interval, and the interval's length.
    var bytesSent = 0
    var intervalMs = 0
    /// The connection's round-trip time and its variation, ms (TCP_INFO's `tcpi_rtt` and
    /// `tcpi_rttvar` for RTMP and RTMPS; SRT's `msRTT` and its smoothed deviation), as of the look;
    /// nil while no connection publishes or the kernel gives none.
    var roundTripMs: Double?
    var roundTripVariationMs = 0.0
    /// Time from a packet's arrival in the queue to its write finishing: mean and standard deviation.
    var queueDelayMs = 0
    var queueJitterMs = 0
    /// Video frames dropped in the interval because the network could not keep up.
    var framesDropped = 0
    var isPublishing = false
    /// The protocol's own figures (SRT's; nil for RTMP).
    var transport: TransportFigures?

    /// What the network carried in the interval, kbps.
    var sendRateKbps: Int { intervalMs > 0 ? bytesSent * 8 / intervalMs : 0 }

    /// A round-trip figure in whole ms for the statistics: the nearest, but never 0 for a measured
    /// time (a loopback round trip of 40 µs is 1), so that 0 keeps meaning "no measurement".
    static func wholeMs(_ ms: Double) -> Int { ms > 0 ? max(1, Int(ms.rounded())) : 0 }
}

/// What one destination carried since it started (`PushOutput.totals`).
struct PushOutputTotals: Sendable {
    var publishedMs = 0
    var bytesSent: Int64 = 0
}

/// One push destination (RTMP, RTMPS or SRT: a `PushConnection` per connection): a bounded queue
/// fed by the pipelines and a sender thread that connects, publishes, reconnects (on the
/// `ReconnectSchedule`: growing waits, until its time or count runs out) and always restarts on a
/// keyframe with fresh sequence headers. The backlog that congestion is measured on is the queue plus what the connection
/// itself holds unacknowledged (SRT's send buffer).
///
/// Congestion (the network is slower than the encoder): when the queue holds more than
/// `dropThresholdMs` of media, queued video P-frames are dropped and so is incoming video up to
/// the next keyframe, as OBS does. Keyframes and audio are never dropped for congestion; only
/// when the queue passes `maxQueuedBytes` (a connection that barely moves, until the send
/// timeout declares it lost) does the oldest media go, so memory stays bounded.
final class PushOutput: EncodedMediaSink, @unchecked Sendable {
    let url: PushDestination
    /// Replaced (under `condition`) when the video encoder changes size: a reconnection starts with these.
    private var headers: StreamHeaders
    private let audioSpecificConfig: [UInt8]?
    /// rtmps://: an extra CA (PEM) besides the system store.
    private let caFile: String?
    /// srt://: the codec parameters the MPEG-TS muxer of each connection starts from.
    private let muxerStreams: MuxerStreamParameters?
    /// The connection's own backlog (SRT's send buffer), ms, as of the last packet sent.
    private var transportBacklogMs = 0
    /// When to try again and when to give up; the sender thread's own (its copy in `run`).
    private let schedule: ReconnectSchedule
    let dropThresholdMs: Int
    /// A quarter of a second of the stream at its target rates (32 KiB to 512 KiB).
    private let sendBufferBytes: Int
    private let maxQueuedBytes = 32 * 1024 * 1024
    private let condition = NSCondition()
    /// Oldest first; a ring, so taking from the front shifts nothing and steady state allocates nothing.
    private var queue = RingQueue<QueuedPacket>()
    private var queuedBytes = 0
    /// Video frames in `queue` (their count, not their timestamps' span, measures the backlog).
    private var queuedVideoFrames = 0
    /// AAC frames in `queue`: audio is never dropped, so under a slow network it is what waits.
    private var queuedAudioFrames = 0
    /// One video frame's duration, µs.
    private let frameIntervalUs: Int
    private var droppingUntilKeyframe = false
    /// True while a connection publishes: media that arrives otherwise is not queued.
    private var publishing = false
    private var stopped = false
    private var finished = false
    /// The connection in use, to break it when stopping takes too long.
    private var currentPublisher: (any PushConnection)?
    /// Set by `reconnect()`: the sender drops its connection and connects again.
    private var reconnectRequested = false
    private var figures = PushOutputFigures()
    private var figuresSinceNs = MonotonicClock.nowNs()
    private var totalBytesSent: Int64 = 0
    private var publishedNs: UInt64 = 0
    /// Since when the current connection publishes, while one does.
    private var publishingSinceNs: UInt64?
    private var delaySumMs = 0.0, delaySquareSumMs = 0.0, delayCount = 0
    /// A status and its sentence; for `.disconnected` after a give-up, the failure that ended it
    /// (nil for every other status: a stop asked for, connecting, publishing); for `.reconnecting`,
    /// the attempt that follows and the wait before it.
    var onStatus: (@Sendable (PushStatus, String, PushError?, ReconnectSchedule.Retry?) -> Void)?
    /// A connection attempt failed and another follows (the error, the attempt and its wait).
    var onRetry: (@Sendable (PushError, ReconnectSchedule.Retry) -> Void)?
    /// Pushing ended for good: the server refused, or reconnecting ran out of retries.
    var onFailure: (@Sendable (PushError) -> Void)?
    /// Called when a (re)connection needs a keyframe to start on.
    var onNeedKeyframe: (@Sendable () -> Void)?
    /// Called (on a pipeline thread) when congestion starts dropping video.
    var onCongestion: (@Sendable (Int) -> Void)?

    private struct QueuedPacket {
        enum Media {
            case video(EncodedVideoPacket)
            case audio(EncodedAudioPacket)
            /// New metadata and AVC sequence header (adaptive resolution), before the new size's first frame.
            case headers(StreamHeaders)
        }
        let media: Media
        let ptsMs: Int64
        let arrivalNs: UInt64
        var bytes: Int {
            switch media {
            case .video(let packet): packet.payload.count
            case .audio(let packet): packet.payload.count
            case .headers: 0
            }
        }
        var isVideo: Bool {
            if case .video = media { return true }
            return false
        }
        var isAudio: Bool {
            if case .audio = media { return true }
            return false
        }
        var isDroppableVideo: Bool {
            if case .video(let packet) = media { return !packet.isKeyframe }
            return false
        }
    }

    init(url: PushDestination, encoder: H264Encoder, audioEncoder: AACEncoder?, schedule: ReconnectSchedule,
         caFile: String? = nil, dropThresholdMs: Int = 2000) throws(MediaError)
    {
        self.url = url
        self.caFile = caFile
        if case .srt = url {
            muxerStreams = try MuxerStreamParameters(encoder: encoder, audioEncoder: audioEncoder)
        } else {
            muxerStreams = nil
        }
        headers = try Self.headers(encoder: encoder, audioEncoder: audioEncoder)
        audioSpecificConfig = audioEncoder?.audioSpecificConfig
        let settings = encoder.settings
        let streamKbps = settings.bitrateKbps + (audioEncoder?.settings.bitrateKbps ?? 0)
        sendBufferBytes = max(32 * 1024, min(512 * 1024, streamKbps * 1000 / 8 / 4))
        self.schedule = schedule
        self.dropThresholdMs = dropThresholdMs
        self.audioEncoder = audioEncoder
        frameIntervalUs = 1_000_000 / max(1, settings.fps)
        audioFrameUs = audioEncoder.map { 1024 * 1_000_000 / max(1, $0.settings.sampleRateHz) } ?? 0
    }

    private let audioEncoder: AACEncoder?
    /// One AAC frame's duration (1024 samples), µs.
    private let audioFrameUs: Int
    /// The newest media time handed in (under `condition`).
    private var lastPtsMs: Int64 = 0

    /// The metadata and sequence headers for `encoder`'s stream.
    private static func headers(encoder: H264Encoder, audioEncoder: AACEncoder?) throws(MediaError) -> StreamHeaders {
        guard let record = AVC.decoderConfigurationRecord(annexBExtradata: encoder.extradata) else {
            throw .ffmpeg(call: "SPS/PPS from the encoder", code: -1, message: "the encoder gave no SPS and PPS")
        }
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
        return StreamHeaders(decoderConfiguration: record, audioSpecificConfig: audioEncoder?.audioSpecificConfig,
                             metadata: metadata)
    }

    /// Adaptive resolution changed the encoder: the new headers go out before its first frame
    /// (RTMP: onMetaData with the new size and a new AVC sequence header; SRT's MPEG-TS carries
    /// SPS and PPS in-band), and a reconnection starts with them.
    func videoEncoderChanged(_ encoder: H264Encoder) {
        guard let newHeaders = try? Self.headers(encoder: encoder, audioEncoder: audioEncoder) else { return }
        condition.lock()
        defer { condition.unlock() }
        headers = newHeaders
        guard publishing else { return }
        // At the time of the last media handed in: the stream's timestamps never go back.
        enqueue(QueuedPacket(media: .headers(newHeaders), ptsMs: lastPtsMs, arrivalNs: MonotonicClock.nowNs()))
    }

    func start() {
        let name = url.isSRT ? "livepush-srt" : "livepush-rtmp"
        let thread = Thread { [self] in
            ThreadName.setCurrent(name)
            run()
        }
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
    func takeFigures() -> PushOutputFigures {
        condition.lock()
        defer { condition.unlock() }
        let nowNs = MonotonicClock.nowNs()
        var result = figures
        result.intervalMs = Int((nowNs - figuresSinceNs) / 1_000_000)
        result.queuedMs = reportedBacklogMs
        result.isPublishing = publishing
        result.transport = publishing ? currentPublisher?.takeTransportFigures() : nil
        if publishing, let roundTrip = currentPublisher?.roundTripMs {
            result.roundTripMs = roundTrip.rtt
            result.roundTripVariationMs = roundTrip.variation
        }
        if delayCount > 0 {
            let mean = delaySumMs / Double(delayCount)
            result.queueDelayMs = Int(mean.rounded())
            result.queueJitterMs = Int(max(0, delaySquareSumMs / Double(delayCount) - mean * mean).squareRoot().rounded())
        }
        figures = PushOutputFigures()
        figuresSinceNs = nowNs
        delaySumMs = 0
        delaySquareSumMs = 0
        delayCount = 0
        return result
    }

    /// Time published and bytes sent since the start, over every connection.
    var totals: PushOutputTotals {
        condition.lock()
        defer { condition.unlock() }
        let currentNs = publishingSinceNs.map { MonotonicClock.nowNs() - $0 } ?? 0
        return PushOutputTotals(publishedMs: Int((publishedNs + currentNs) / 1_000_000), bytesSent: totalBytesSent)
    }

    /// What the queue holds, by its video frames: a stall of the pusher (its ticks skipped, the
    /// next picture's timestamp a second on) adds no frame, so it is never taken for congestion.
    private var queuedDurationMs: Int { queuedVideoFrames * frameIntervalUs / 1000 }

    /// The backlog the statistics report (auto bitrate, the poor-network picture): the queue's video
    /// frames or its audio frames, whichever holds more time. Under a slow network the video is
    /// dropped to keyframes and the audio, never dropped, is what waits; a stall's burst of audio is
    /// sent at once on a healthy network, long before the once-a-second look.
    private var reportedBacklogMs: Int {
        max(queuedDurationMs, queuedAudioFrames * audioFrameUs / 1000) + transportBacklogMs
    }

    /// The queue and what the connection holds unacknowledged: the backlog congestion is measured on.
    private var backlogMs: Int { queuedDurationMs + transportBacklogMs }

    func receive(_ packet: EncodedVideoPacket, ptsMs: Int64) {
        condition.lock()
        let dropped = queueVideo(packet, ptsMs: ptsMs)
        condition.unlock()
        // After the lock: the callback is the pusher's, and may take locks of its own.
        if let dropped { onCongestion?(dropped) }
    }

    /// Queues a video packet, called with the lock held: how many frames congestion dropped, if it did.
    private func queueVideo(_ packet: EncodedVideoPacket, ptsMs: Int64) -> Int? {
        lastPtsMs = max(lastPtsMs, ptsMs)
        guard publishing else { return nil }
        if droppingUntilKeyframe && !packet.isKeyframe {
            dropVideo(1)
            return nil
        }
        droppingUntilKeyframe = false
        enqueue(QueuedPacket(media: .video(packet), ptsMs: ptsMs, arrivalNs: MonotonicClock.nowNs()))
        if backlogMs > dropThresholdMs {
            // Congested: the P-frames go (the queue's and the incoming ones up to the next keyframe).
            let before = queue.count
            queue.removeAll { $0.isDroppableVideo }
            queuedBytes = 0
            queuedVideoFrames = 0
            queuedAudioFrames = 0
            queue.forEach {
                queuedBytes += $0.bytes
                if $0.isVideo { queuedVideoFrames += 1 }
                if $0.isAudio { queuedAudioFrames += 1 }
            }
            droppingUntilKeyframe = true
            let dropped = before - queue.count
            dropVideo(dropped)
            return dropped
        }
        return nil
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
        if packet.isVideo { queuedVideoFrames += 1 }
        if packet.isAudio { queuedAudioFrames += 1 }
        while queuedBytes > maxQueuedBytes, let oldest = queue.popFirst() {
            queuedBytes -= oldest.bytes
            if oldest.isVideo { queuedVideoFrames -= 1 }
            if oldest.isAudio { queuedAudioFrames -= 1 }
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
        var schedule = self.schedule
        var baseMs: Int64?
        onStatus?(.connecting, "connecting to \(url)", nil, nil)
        while !isStopped {
            do throws(PushError) {
                let publisher = try connect()
                condition.lock()
                currentPublisher = publisher
                condition.unlock()
                defer {
                    condition.lock()
                    currentPublisher = nil
                    condition.unlock()
                }
                try publisher.sendHeaders()
                setPublishing(true)
                onStatus?(.connectSuccess, "publishing to \(url)", nil, nil)
                onNeedKeyframe?()
                schedule.connected()
                defer { setPublishing(false) }
                switch try sendLoop(publisher, baseMs: &baseMs) {
                case .stopped:
                    publisher.finish()
                    onStatus?(.disconnected, "stopped pushing to \(url)", nil, nil)
                    return
                case .reconnectRequested:
                    // At once, counted as the first attempt of an outage that begins now.
                    let now = schedule.requested(atNs: MonotonicClock.nowNs())
                    onStatus?(.reconnecting, "reconnecting to \(url) now (\(schedule.describe(now)))", nil, now)
                    continue
                }
            } catch {
                // What the server said (an `_error` or `onStatus` description, SRT's reject reason)
                // is shown with its control characters escaped from here on (SPEC §2.3's rule,
                // applied to servers too): in onError, the status messages, the events, the report.
                let error = error.neutralised
                if isStopped { break }
                let retry = error.kind.isPermanent
                    ? nil : schedule.failed(atNs: MonotonicClock.nowNs(), random: Double.random(in: 0...1))
                guard let retry else {
                    onFailure?(error)
                    onStatus?(.disconnected, "gave up on \(url): \(error)", error, nil)
                    return
                }
                onRetry?(error, retry)
                onStatus?(.reconnecting, "reconnecting to \(url) in \(retry.waitMs) ms (\(schedule.describe(retry)))",
                          nil, retry)
                condition.lock()
                let deadline = Date().addingTimeInterval(Double(retry.waitMs) / 1000)
                // A reconnection asked for while waiting starts the attempt at once.
                while !stopped && !reconnectRequested && condition.wait(until: deadline) {}
                reconnectRequested = false
                condition.unlock()
            }
        }
        onStatus?(.disconnected, "stopped pushing to \(url)", nil, nil)
    }

    /// How a connection's send loop ended without a failure.
    private enum ConnectionEnd {
        case stopped
        /// `reconnect()` asked for a new connection; the old one was finished politely.
        case reconnectRequested
    }

    /// A new connection of the destination's kind.
    private func connect() throws(PushError) -> any PushConnection {
        switch url {
        case .rtmp(let rtmp):
            let headers = condition.withLock { self.headers }
            return try RTMPConnection(url: rtmp, caFile: caFile, sendBufferBytes: sendBufferBytes, headers: headers)
        case .srt(let srt):
            guard let muxerStreams else { throw PushError(step: .connect, detail: "no MPEG-TS streams", kind: .networkLost) }
            return try SRTConnection(url: srt, streams: muxerStreams)
        }
    }

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
        queuedVideoFrames = 0
        queuedAudioFrames = 0
        droppingUntilKeyframe = false
        transportBacklogMs = 0
        condition.unlock()
    }

    /// Sends queued packets until stopped; a (re)connection starts at a keyframe, and audio
    /// joins from there.
    private func sendLoop(_ publisher: any PushConnection, baseMs: inout Int64?) throws(PushError) -> ConnectionEnd {
        var waitingForKeyframe = true
        var keyframePtsMs: Int64 = 0
        while true {
            condition.lock()
            while queue.isEmpty && !stopped && !reconnectRequested { condition.wait() }
            if stopped {
                condition.unlock()
                return .stopped
            }
            if reconnectRequested {
                reconnectRequested = false
                condition.unlock()
                publisher.finish()
                return .reconnectRequested
            }
            guard let packet = queue.popFirst() else {
                condition.unlock()
                continue
            }
            queuedBytes -= packet.bytes
            if packet.isVideo { queuedVideoFrames -= 1 }
            if packet.isAudio { queuedAudioFrames -= 1 }
            condition.unlock()
            switch packet.media {
            case .video(let video):
                if waitingForKeyframe {
                    guard video.isKeyframe else { continue }
                    waitingForKeyframe = false
                    keyframePtsMs = packet.ptsMs
                }
            case .audio:
                guard !waitingForKeyframe, packet.ptsMs >= keyframePtsMs else { continue }
            case .headers(let headers):
                // Before the new size's first keyframe; at the start of a connection, its own headers are current.
                if waitingForKeyframe { continue }
                let timestampMs = UInt32(clamping: max(0, packet.ptsMs - (baseMs ?? packet.ptsMs)))
                try publisher.sendVideoHeaders(headers, timestampMs: timestampMs)
                continue
            }
            if baseMs == nil { baseMs = packet.ptsMs }
            let timestampMs = UInt32(clamping: max(0, packet.ptsMs - baseMs!))
            let bytes = switch packet.media {
            case .video(let video): try publisher.send(video: video, timestampMs: timestampMs)
            case .audio(let audio): try publisher.send(audio: audio, timestampMs: timestampMs)
            case .headers: 0
            }
            let backlogMs = publisher.transportBacklogMs
            let delayMs = Double(MonotonicClock.nowNs() - packet.arrivalNs) / 1e6
            condition.lock()
            transportBacklogMs = backlogMs
            figures.bytesSent += bytes
            totalBytesSent += Int64(bytes)
            delaySumMs += delayMs
            delaySquareSumMs += delayMs * delayMs
            delayCount += 1
            condition.unlock()
        }
    }
}
