import FLV
import Media
import RTMP
import SRT

/// One live connection of a push output to its server: RTMP (over TCP or TLS) or SRT. The
/// output's sender thread owns it; only `abort` is called from another thread. Failures are
/// `PushError`s for either protocol, so the status events, retries and codes are the same.
protocol PushConnection: AnyObject {
    /// Metadata and the sequence headers (RTMP), or nothing (MPEG-TS repeats them in-band).
    func sendHeaders() throws(PushError)
    /// One encoded frame at `timestampMs` on the stream's timeline; returns the bytes written.
    func send(video packet: EncodedVideoPacket, timestampMs: UInt32) throws(PushError) -> Int
    /// One AAC frame at `timestampMs`; returns the bytes written.
    func send(audio packet: EncodedAudioPacket, timestampMs: UInt32) throws(PushError) -> Int
    /// Media accepted but not yet acknowledged by the network, in ms (SRT's send buffer; RTMP: 0,
    /// its backlog is the output's queue). Added to the queue for congestion and auto bitrate.
    var transportBacklogMs: Int { get }
    /// The protocol's own figures since the previous call (SRT), nil when it has none (RTMP).
    func takeTransportFigures() -> TransportFigures?
    /// The round-trip time and its variation now, ms (called after `takeTransportFigures`, on the
    /// statistics tick's thread); nil when the protocol gives none yet.
    var roundTripMs: (rtt: Double, variation: Double)? { get }
    /// The video's new metadata and sequence header mid-stream (adaptive resolution); MPEG-TS
    /// carries SPS and PPS in-band, so SRT sends nothing.
    func sendVideoHeaders(_ headers: StreamHeaders, timestampMs: UInt32) throws(PushError)
    /// Ends the stream politely (FCUnpublish; SRT close).
    func finish()
    /// Breaks the connection from another thread.
    func abort()
}

/// The stream's metadata and sequence headers, shared by every connection of one output.
struct StreamHeaders {
    let decoderConfiguration: [UInt8]
    let audioSpecificConfig: [UInt8]?
    let metadata: [(String, AMF0Value)]
}

/// RTMP or RTMPS: FLV tag bodies through our `RTMPPublisher`.
final class RTMPConnection: PushConnection {
    private let publisher: RTMPPublisher
    private let headers: StreamHeaders
    /// The FLV tag body being sent, reused from packet to packet (no allocation per packet).
    private var body: [UInt8] = []

    init(url: RTMPURL, caFile: String?, sendBufferBytes: Int, headers: StreamHeaders) throws(PushError) {
        do {
            publisher = try RTMPPublisher(url: url, caFile: caFile, sendBufferBytes: sendBufferBytes)
        } catch {
            throw PushError(error)
        }
        self.headers = headers
    }

    /// The RTMP client's calls, their failures in LivePush's terms.
    private func rtmp<T>(_ body: () throws(RTMPError) -> T) throws(PushError) -> T {
        do {
            return try body()
        } catch {
            throw PushError(error)
        }
    }

    func sendHeaders() throws(PushError) {
        try rtmp { () throws(RTMPError) in
            try publisher.sendMetadata(headers.metadata)
            try publisher.sendVideo(FLV.avcSequenceHeaderBody(decoderConfigurationRecord: headers.decoderConfiguration),
                                    timestampMs: 0)
            if let config = headers.audioSpecificConfig {
                try publisher.sendAudio(FLV.aacSequenceHeaderBody(audioSpecificConfig: config), timestampMs: 0)
            }
        }
    }

    func sendVideoHeaders(_ headers: StreamHeaders, timestampMs: UInt32) throws(PushError) {
        try rtmp { () throws(RTMPError) in
            try publisher.sendMetadata(headers.metadata)
            try publisher.sendVideo(FLV.avcSequenceHeaderBody(decoderConfigurationRecord: headers.decoderConfiguration),
                                    timestampMs: timestampMs)
        }
    }

    func send(video packet: EncodedVideoPacket, timestampMs: UInt32) throws(PushError) -> Int {
        body.removeAll(keepingCapacity: true)
        packet.payload.withUnsafeBytes {
            FLV.appendAVCVideoBody(annexB: $0, isKeyframe: packet.isKeyframe, compositionTimeMs: 0, to: &body)
        }
        try rtmp { () throws(RTMPError) in try publisher.sendVideo(body, timestampMs: timestampMs) }
        return body.count
    }

    func send(audio packet: EncodedAudioPacket, timestampMs: UInt32) throws(PushError) -> Int {
        body.removeAll(keepingCapacity: true)
        packet.payload.withUnsafeBytes { FLV.appendAACFrameBody($0, to: &body) }
        try rtmp { () throws(RTMPError) in try publisher.sendAudio(body, timestampMs: timestampMs) }
        return body.count
    }

    var transportBacklogMs: Int { 0 }
    func takeTransportFigures() -> TransportFigures? { nil }
    /// TCP_INFO's: the kernel's smoothed RTT and mean deviation of the TCP connection (under TLS too).
    var roundTripMs: (rtt: Double, variation: Double)? { publisher.roundTripMs }
    func finish() { publisher.finish() }
    func abort() { publisher.abort() }
}
