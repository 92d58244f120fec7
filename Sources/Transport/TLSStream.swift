import CTLS

/// TLS 1.2/1.3 over a connected `TCPStream` (OpenSSL's libssl through the `CTLS` shim, whose C
/// types never leave this file). The certificate is verified against the system's CA store and
/// `caFile`, with SNI and a host-name (or IP address) check; there is no way to turn that off.
public final class TLSStream: ByteStream {
    private let tcp: TCPStream
    private let session: OpaquePointer
    /// The protocol negotiated, "TLSv1.3" or "TLSv1.2".
    public let negotiatedProtocol: String
    public private(set) var bytesReceived: UInt64 = 0
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    private var bufferStart = 0
    private var bufferEnd = 0

    /// Shakes hands within the TCP stream's timeout; a failure names its cause (`TransportError.Kind`).
    public init(over tcp: TCPStream, host: String, caFile: String?) throws(TransportError) {
        self.tcp = tcp
        var result = CTLS_OK
        var detail = [CChar](repeating: 0, count: 512)
        let opened = CTLS_connect(tcp.descriptor, host, caFile, &result, &detail, detail.count)
        guard let opened else {
            throw TransportError("TLS with \(host): \(Self.text(detail))", kind: Self.kind(result))
        }
        session = opened
        negotiatedProtocol = String(cString: CTLS_protocol(opened))
    }

    deinit { CTLS_free(session) }

    /// The OpenSSL version in use, for `livepush doctor` and bug reports.
    public static var libraryVersion: String { String(cString: CTLS_library_version()) }

    public func abort() { tcp.abort() }
    /// The TCP connection's, under TLS.
    public func roundTrip() -> RoundTrip? { tcp.roundTrip() }

    public func write(_ bytes: [UInt8], step: String) throws(TransportError) {
        var detail = [CChar](repeating: 0, count: 256)
        let result = bytes.withUnsafeBytes { CTLS_write(session, $0.baseAddress, $0.count, &detail, detail.count) }
        guard result == CTLS_OK else {
            throw TransportError(step: step, reason: Self.text(detail), kind: Self.kind(result))
        }
    }

    public func read(_ count: Int, step: String) throws(TransportError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(count)
        while output.count < count {
            if bufferStart == bufferEnd { try fill(step: step) }
            let take = min(count - output.count, bufferEnd - bufferStart)
            output += buffer[bufferStart..<bufferStart + take]
            bufferStart += take
        }
        bytesReceived += UInt64(count)
        return output
    }

    private func fill(step: String) throws(TransportError) {
        var detail = [CChar](repeating: 0, count: 256)
        var received = 0
        let result = buffer.withUnsafeMutableBytes {
            CTLS_read(session, $0.baseAddress, $0.count, &received, &detail, detail.count)
        }
        guard result == CTLS_OK else {
            let text = result == CTLS_CLOSED ? "the server closed the connection" : Self.text(detail)
            throw TransportError(step: step, reason: text, kind: Self.kind(result))
        }
        bufferStart = 0
        bufferEnd = received
    }

    private static func text(_ detail: [CChar]) -> String {
        String(decoding: detail.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func kind(_ result: CTLS_result) -> TransportError.Kind {
        switch result {
        case CTLS_CERT_UNTRUSTED: .certificateUntrusted
        case CTLS_CERT_NAME_MISMATCH: .certificateNameMismatch
        case CTLS_CERT_EXPIRED: .certificateExpired
        case CTLS_NOT_TLS: .notTLS
        case CTLS_TIMED_OUT: .timedOut
        case CTLS_CLOSED, CTLS_IO_FAILED: .networkLost
        case CTLS_CA_FILE_UNREADABLE: .caFileUnreadable
        default: .tlsHandshakeFailed
        }
    }
}
