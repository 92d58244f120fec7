/// A connected, ordered byte stream with a deadline on every read and write: what the RTMP
/// client talks to. `TCPStream` is plain TCP; `TLSStream` is TLS over a `TCPStream` (rtmps://).
/// Used from one thread, except `abort`, which any thread may call.
public protocol ByteStream: AnyObject {
    /// Bytes read so far (RTMP acknowledges them).
    var bytesReceived: UInt64 { get }
    /// Writes every byte; `step` names what was being sent, for the error.
    func write(_ bytes: [UInt8], step: String) throws(TransportError)
    /// Reads exactly `count` bytes.
    func read(_ count: Int, step: String) throws(TransportError) -> [UInt8]
    /// Makes a blocked read or write on another thread fail at once.
    func abort()
    /// The kernel's round-trip estimate of the connection under the stream (TCP_INFO), nil when it
    /// cannot be read. Safe to call from any thread.
    func roundTrip() -> RoundTrip?
}

/// A TCP connection's round trip as the kernel measures it from its acknowledgements (TCP_INFO's
/// `tcpi_rtt` and `tcpi_rttvar`): the smoothed round-trip time and its mean deviation, µs.
public struct RoundTrip: Equatable, Sendable {
    public var rttUs: Int
    public var rttVarianceUs: Int
    public init(rttUs: Int, rttVarianceUs: Int) {
        self.rttUs = rttUs
        self.rttVarianceUs = rttVarianceUs
    }
}

/// Why a transport failed: a sentence that names the step, and a kind to act on.
public struct TransportError: Error, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The host name did not resolve.
        case dnsFailed
        /// Nothing listens on the host and port.
        case connectionRefused
        /// The server did not answer in time.
        case timedOut
        /// An established connection broke.
        case networkLost
        /// The peer said something the protocol above does not accept (set by that protocol).
        case protocolError
        /// TLS: the certificate does not lead to a trusted CA.
        case certificateUntrusted
        /// TLS: the certificate is not for the host name asked for.
        case certificateNameMismatch
        /// TLS: the certificate has expired or is not valid yet.
        case certificateExpired
        /// TLS was asked for, and the server does not speak it (a plain RTMP server).
        case notTLS
        /// TLS: the handshake failed for another reason (protocol version, an alert).
        case tlsHandshakeFailed
        /// TLS: the CA file given cannot be read.
        case caFileUnreadable
    }

    /// What the caller was doing (the `step` given to `read` or `write`); nil when opening the
    /// connection failed.
    public let step: String?
    /// The failure itself, without the step: what a layer with its own step names puts after it.
    public let reason: String
    public let kind: Kind
    /// "step: reason", or the reason alone.
    public var description: String { step.map { "\($0): \(reason)" } ?? reason }

    /// A failure to open the connection: `description` is the whole sentence.
    public init(_ description: String, kind: Kind) {
        step = nil
        reason = description
        self.kind = kind
    }

    /// A failure of `step` (a read or a write).
    public init(step: String, reason: String, kind: Kind) {
        self.step = step
        self.reason = reason
        self.kind = kind
    }
}

/// How to reach a server: plain TCP, or TLS with an optional extra CA.
public enum TransportSecurity: Equatable, Sendable {
    case none
    /// TLS 1.2 or 1.3, verified against the system CA store plus `caFile` (PEM, may be nil).
    case tls(caFile: String?)
}

/// Opens a stream to `host:port`: TCP, then TLS when `security` asks for it (SNI and a host-name
/// check for `host`). Every step has `timeoutMs`; `sendBufferBytes` sizes the socket's send buffer.
public func openByteStream(host: String, port: UInt16, security: TransportSecurity, timeoutMs: Int,
                           sendBufferBytes: Int) throws(TransportError) -> any ByteStream
{
    let tcp = try TCPStream(host: host, port: port, timeoutMs: timeoutMs, sendBufferBytes: sendBufferBytes)
    switch security {
    case .none: return tcp
    case .tls(let caFile): return try TLSStream(over: tcp, host: host, caFile: caFile)
    }
}
