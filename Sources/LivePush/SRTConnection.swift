import Media
import RTMP
import SRT

/// SRT in caller mode: H.264 and AAC muxed into MPEG-TS by libavformat, every 1316 bytes one
/// SRT message. Its backlog is libsrt's send buffer (unacknowledged ms), which joins the output's
/// queue for congestion and auto bitrate; its figures come from `srt_bstats`.
final class SRTConnection: PushConnection {
    private let caller: SRTCaller
    private var muxer: MPEGTSMuxer!
    private var sendFailure: SRTError?
    private var bytesWritten = 0

    init(url: SRTURL, streams: MuxerStreamParameters, timeoutMs: Int = 5000) throws(PushError) {
        do {
            caller = try SRTCaller(url: url, timeoutMs: timeoutMs)
        } catch {
            throw PushError(error, step: .connect)
        }
        do {
            muxer = try MPEGTSMuxer(streams: streams) { [unowned self] chunk in
                do throws(SRTError) {
                    try caller.send(chunk)
                    bytesWritten += chunk.count
                    return true
                } catch {
                    sendFailure = error
                    return false
                }
            }
        } catch {
            throw sendFailure.map { PushError($0, step: .send) }
                ?? PushError(step: .connect, detail: "cannot start the MPEG-TS muxer: \(error)", kind: .networkLost)
        }
    }

    func sendHeaders() throws(PushError) {}
    func sendVideoHeaders(_ headers: StreamHeaders, timestampMs: UInt32) throws(PushError) {}

    func send(video packet: EncodedVideoPacket, timestampMs: UInt32) throws(PushError) -> Int {
        try write { () throws(MediaError) in try muxer.write(video: packet, timestampMs: Int64(timestampMs)) }
    }

    func send(audio packet: EncodedAudioPacket, timestampMs: UInt32) throws(PushError) -> Int {
        try write { () throws(MediaError) in try muxer.write(audio: packet, timestampMs: Int64(timestampMs)) }
    }

    private func write(_ body: () throws(MediaError) -> Void) throws(PushError) -> Int {
        let before = bytesWritten
        do {
            try body()
        } catch {
            throw sendFailure.map { PushError($0, step: .send) }
                ?? PushError(step: .send, detail: "MPEG-TS muxing failed: \(error)", kind: .networkLost)
        }
        return bytesWritten - before
    }

    var transportBacklogMs: Int { caller.sendBufferMs }

    func takeTransportFigures() -> TransportFigures? {
        let figures = TransportFigures(caller.takeStatistics())
        // libsrt gives its smoothed RTT but not its deviation: smoothed here the way TCP does
        // (RFC 6298: rttvar = 3/4 rttvar + 1/4 |srtt - sample|), from one look a second.
        if figures.rttMs > 0 {
            if let last = roundTrip {
                roundTrip = (figures.rttMs, 0.75 * last.variation + 0.25 * abs(last.rtt - figures.rttMs))
            } else {
                roundTrip = (figures.rttMs, figures.rttMs / 2)
            }
        }
        return figures
    }

    /// SRT's own `msRTT` and its deviation, as of the last `takeTransportFigures` (the tick's thread).
    private var roundTrip: (rtt: Double, variation: Double)?
    var roundTripMs: (rtt: Double, variation: Double)? { roundTrip }

    func finish() { caller.abort() }
    func abort() { caller.abort() }
}
