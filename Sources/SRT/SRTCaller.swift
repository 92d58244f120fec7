import CSRT
import CLazyLibraries
import Glibc
import Synchronization

/// Why an SRT connection failed or broke: a sentence to show and a kind to act on.
public struct SRTError: Error, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The host name did not resolve.
        case dnsFailed
        /// No listener answered within the connect timeout (SRT is UDP: there is no "refused").
        case timedOut
        /// The listener refused the passphrase: wrong, missing, or given to one that has none.
        case passphraseRejected
        /// The listener refused the connection (the stream id, for instance).
        case rejected
        /// An established connection broke.
        case networkLost
        /// libsrt could not make or set up the socket.
        case setupFailed
    }

    public let kind: Kind
    public let description: String
}

/// SRT's own figures (`srt_bstats`) for the interval since the previous call.
public struct SRTStatistics: Sendable, Equatable {
    public var rttMs = 0.0
    /// Packets the receiver reported lost, retransmitted, and dropped as too late to send.
    public var packetsLost = 0
    public var packetsRetransmitted = 0
    public var packetsDropped = 0
    /// Data packets sent, retransmissions included.
    public var packetsSent = 0
    public var sendRateKbps = 0
    /// Packets reported lost, in percent of the packets sent (0 when nothing was sent).
    public var lossPercent: Int { packetsSent > 0 ? packetsLost * 100 / packetsSent : 0 }
    /// Unacknowledged media in the send buffer, in ms and packets (the backlog).
    public var sendBufferMs = 0
    public var sendBufferPackets = 0
}

/// libsrt is loaded on first use (CLazyLibraries): nil when it could be, else why not (the file, the package).
private let srtMissing: String? = CLazyLibraries_check(CLazyLibraries_srt).map { String(cString: $0) }

/// libsrt is started once per process (srt_startup is reference-counted; never cleaned up).
private let srtStarted: Bool = {
    srt_setloglevel(2)  // LOG_CRIT: our errors say what failed; libsrt's own lines would repeat it on stderr
    return srt_startup() >= 0
}()

/// One SRT connection in caller mode, live transmission type, sending messages of at most
/// 1316 bytes (seven TS packets). Every send has a timeout, so a stalled path fails instead
/// of hanging. Used from one thread; `abort` may be called from any.
public final class SRTCaller {
    public let url: SRTURL
    private let socket: SRTSOCKET
    /// Set by the first `close` (the sending thread's or `abort`'s, from any thread).
    private let closed = Atomic<Bool>(false)

    /// Connects within `timeoutMs`; `sendBufferBytes` sizes libsrt's send buffer.
    public init(url: SRTURL, timeoutMs: Int = 5000, sendBufferBytes: Int? = nil) throws(SRTError) {
        self.url = url
        if let srtMissing {
            throw SRTError(kind: .setupFailed, description: "SRT is not available: \(srtMissing)")
        }
        guard srtStarted else { throw SRTError(kind: .setupFailed, description: "srt_startup failed") }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(url.host, String(url.port), &hints, &results)
        guard status == 0, let address = results else {
            throw SRTError(kind: .dnsFailed, description: "cannot resolve '\(url.host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(results) }
        socket = srt_create_socket()
        guard socket != SRT_INVALID_SOCK else {
            throw SRTError(kind: .setupFailed, description: "srt_create_socket: \(Self.lastError())")
        }
        do throws(SRTError) {
            try set(SRTO_TRANSTYPE, Int32(SRTT_LIVE.rawValue), "transtype")
            try set(SRTO_SENDER, 1, "sender")
            try set(SRTO_LATENCY, Int32(url.latencyMs), "latency")
            try set(SRTO_CONNTIMEO, Int32(timeoutMs), "connect timeout")
            try set(SRTO_SNDTIMEO, Int32(timeoutMs), "send timeout")
            if let sendBufferBytes { try set(SRTO_SNDBUF, Int32(clamping: sendBufferBytes), "send buffer") }
            if let streamID = url.streamID { try set(SRTO_STREAMID, streamID, "streamid") }
            if let passphrase = url.passphrase { try set(SRTO_PASSPHRASE, passphrase, "passphrase") }
            if srt_connect(socket, address.pointee.ai_addr, Int32(address.pointee.ai_addrlen)) == SRT_ERROR {
                throw connectError()
            }
        } catch {
            srt_close(socket)
            throw error
        }
    }

    deinit { close() }

    private func set(_ option: SRT_SOCKOPT, _ value: Int32, _ name: String) throws(SRTError) {
        var value = value
        if srt_setsockflag(socket, option, &value, Int32(MemoryLayout<Int32>.size)) == SRT_ERROR {
            throw SRTError(kind: .setupFailed, description: "setting SRT \(name): \(Self.lastError())")
        }
    }

    private func set(_ option: SRT_SOCKOPT, _ value: String, _ name: String) throws(SRTError) {
        let result = value.withCString { srt_setsockflag(socket, option, $0, Int32(strlen($0))) }
        if result == SRT_ERROR {
            // Never the value itself: it is a secret.
            throw SRTError(kind: .setupFailed, description: "setting SRT \(name): \(Self.lastError())")
        }
    }

    private func connectError() -> SRTError {
        let reason = srt_getrejectreason(socket)
        let target = "\(url.host):\(url.port)"
        switch Int(reason) {
        case Int(SRT_REJ_BADSECRET.rawValue):
            return SRTError(kind: .passphraseRejected, description: "the SRT listener at \(target) refused the passphrase "
                + "(it is wrong): use the passphrase the server expects")
        case Int(SRT_REJ_UNSECURE.rawValue):
            return SRTError(kind: .passphraseRejected, description: url.passphrase == nil
                ? "the SRT listener at \(target) requires a passphrase: add passphrase=... to the URL"
                : "the SRT listener at \(target) does not use encryption: remove passphrase=... from the URL")
        case Int(SRT_REJ_TIMEOUT.rawValue), Int(SRT_REJ_UNKNOWN.rawValue):
            return SRTError(kind: .timedOut, description: "no SRT listener answered at \(target) in time "
                + "(is a server listening there, in listener mode?)")
        case Int(SRT_REJC_PREDEFINED)...:
            return SRTError(kind: .rejected, description: "the SRT listener at \(target) refused the connection (code "
                + "\(reason)): check the streamid")
        default:
            let words = String(cString: srt_rejectreason_str(reason))
            return SRTError(kind: .rejected, description: "the SRT listener at \(target) refused the connection: \(words)")
        }
    }

    /// Sends one message (at most 1316 bytes).
    public func send(_ bytes: UnsafeRawBufferPointer) throws(SRTError) {
        let result = srt_sendmsg2(socket, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil)
        if result == SRT_ERROR {
            let code = srt_getlasterror(nil)
            let kind: SRTError.Kind = code == Int32(SRT_ETIMEOUT.rawValue) || code == Int32(SRT_EASYNCSND.rawValue)
                ? .timedOut : .networkLost
            throw SRTError(kind: kind, description: "sending over SRT: \(Self.lastError())")
        }
    }

    /// The figures since the previous call (`srt_bstats` with clear).
    public func takeStatistics() -> SRTStatistics {
        var perf = SRT_TRACEBSTATS()
        guard srt_bstats(socket, &perf, 1) == 0 else { return SRTStatistics() }
        var figures = SRTStatistics()
        figures.rttMs = perf.msRTT
        figures.packetsLost = Int(perf.pktSndLoss)
        figures.packetsRetransmitted = Int(perf.pktRetrans)
        figures.packetsDropped = Int(perf.pktSndDrop)
        figures.packetsSent = Int(perf.pktSent)
        figures.sendRateKbps = Int((perf.mbpsSendRate * 1000).rounded())
        figures.sendBufferMs = Int(perf.msSndBuf)
        figures.sendBufferPackets = Int(perf.pktSndBuf)
        return figures
    }

    /// Unacknowledged media in the send buffer now, ms (without clearing the interval figures).
    public var sendBufferMs: Int {
        var perf = SRT_TRACEBSTATS()
        guard srt_bstats(socket, &perf, 0) == 0 else { return 0 }
        return Int(perf.msSndBuf)
    }

    /// Closes the socket; a send blocked on another thread fails at once.
    public func abort() { close() }

    private func close() {
        let wasClosed = closed.exchange(true, ordering: .acquiringAndReleasing)
        if !wasClosed { srt_close(socket) }
    }

    private static func lastError() -> String { String(cString: srt_getlasterror_str()) }
}
