import Transport

/// Why publishing failed; each case names the step. `description` is the step once, then the
/// detail: "sending media: sending failed: Broken pipe".
public struct RTMPError: Error, Equatable, CustomStringConvertible {
    public enum Step: String, Sendable {
        case connect = "connecting"
        case handshake
        case netConnection = "NetConnection.connect"
        case createStream
        case publish
        case send = "sending media"
    }

    /// What kind of failure it was, for an application deciding what to tell the user.
    public enum Kind: String, Sendable {
        /// The host name did not resolve.
        case dnsFailed
        /// Nothing listens on the host and port.
        case connectionRefused
        /// The server did not answer a step in time (or the network dropped packets).
        case timedOut
        /// The server broke off or garbled the RTMP handshake or a command.
        case handshakeFailed
        /// The server refused the application or the stream (publish rejected, key in use).
        case rejected
        /// An established connection broke while sending.
        case networkLost
        /// rtmps://: the server's certificate does not lead to a trusted CA (no retries).
        case certificateUntrusted
        /// rtmps://: the certificate is not for the URL's host (no retries).
        case certificateNameMismatch
        /// rtmps://: the certificate has expired or is not valid yet (no retries).
        case certificateExpired
        /// rtmps:// to a server that does not speak TLS, e.g. a plain RTMP port (no retries).
        case notTLS
        /// rtmps://: the TLS handshake failed (protocol version, an alert from the server).
        case tlsHandshakeFailed
        /// rtmps://: the CA file given (`--ca-file`, `caFile`) cannot be read (no retries).
        case caFileUnreadable
        /// The server sent what RTMP does not allow (`RTMPError.violation` names it): a Set Chunk
        /// Size outside 1...2^31-1, a window acknowledgement size of 0, a message too large. The
        /// connection is closed; a new one may reach a server that behaves.
        case protocolViolation
        /// A call the publisher's state does not allow (`RTMPPublisher.State`): media after
        /// `finish()` or after a failure. The caller's mistake; nothing was sent.
        case wrongState

        /// Whether trying again cannot help: the server refused, or the TLS setup is wrong.
        public var isPermanent: Bool {
            switch self {
            case .rejected, .certificateUntrusted, .certificateNameMismatch, .certificateExpired, .notTLS,
                 .caFileUnreadable:
                true
            default: false
            }
        }

        init(_ transport: TransportError.Kind) {
            switch transport {
            case .dnsFailed: self = .dnsFailed
            case .connectionRefused: self = .connectionRefused
            case .timedOut: self = .timedOut
            case .networkLost: self = .networkLost
            case .protocolError: self = .handshakeFailed
            case .certificateUntrusted: self = .certificateUntrusted
            case .certificateNameMismatch: self = .certificateNameMismatch
            case .certificateExpired: self = .certificateExpired
            case .notTLS: self = .notTLS
            case .tlsHandshakeFailed: self = .tlsHandshakeFailed
            case .caFileUnreadable: self = .caFileUnreadable
            }
        }
    }

    /// What a server sent that RTMP does not allow (`Kind.protocolViolation`), with the value.
    public enum Violation: Equatable, Sendable, CustomStringConvertible {
        /// Set Chunk Size with a size outside 1...2^31-1 (0, or the reserved top bit set).
        case chunkSizeOutOfRange(UInt32)
        /// Window Acknowledgement Size 0: an acknowledgement would be due after every byte.
        case windowAcknowledgementSizeZero
        /// A protocol control message shorter than its fields.
        case controlMessageTooShort(type: UInt8, bytes: Int)
        /// A message longer than the `limit` bytes a publisher accepts from its server.
        case messageTooLarge(bytes: Int, limit: Int)
        /// A chunk with a type-2 or type-3 header on a chunk stream that has had no header
        /// with a length: there is no message for it to continue.
        case chunkWithoutHeader(chunkStream: UInt32)

        public var description: String {
            switch self {
            case .chunkSizeOutOfRange(let size):
                "the server set the chunk size to \(size), outside 1...2147483647 (Set Chunk Size)"
            case .windowAcknowledgementSizeZero:
                "the server set the window acknowledgement size to 0 (Window Acknowledgement Size)"
            case .controlMessageTooShort(let type, let bytes):
                "the server sent a control message of type \(type) with \(bytes) bytes, shorter than its fields"
            case .messageTooLarge(let bytes, let limit):
                "the server announced a message of \(bytes) bytes, more than the \(limit) a publisher accepts"
            case .chunkWithoutHeader(let chunkStream):
                "the server continued chunk stream \(chunkStream) before sending its first header"
            }
        }
    }

    public let step: Step
    public let detail: String
    public let kind: Kind
    /// What the server did wrong, when `kind` is `protocolViolation`.
    public let violation: Violation?
    public var description: String { "\(step.rawValue): \(detail)" }

    public init(step: Step, detail: String, kind: Kind? = nil) {
        self.step = step
        self.detail = detail
        self.kind = kind ?? Self.defaultKind(step)
        violation = nil
    }

    /// The server broke the protocol during `step`.
    init(step: Step, violation: Violation) {
        self.step = step
        detail = violation.description
        kind = .protocolViolation
        self.violation = violation
    }

    /// The transport failed during `step`: its reason, after `part` when the step has parts
    /// ("S0+S1"). Opening the connection and the handshake keep the transport's kind, and so does
    /// sending media (a broken socket then is the network's); during the commands a timeout stays
    /// a timeout and anything else is the step's own kind of failure.
    init(step: Step, transport failure: TransportError, part: String? = nil) {
        let transportKind = step == .connect || step == .handshake || step == .send || failure.kind == .timedOut
        let kind = transportKind ? Kind(failure.kind) : nil
        self.init(step: step, detail: part.map { "\($0): \(failure.reason)" } ?? failure.reason, kind: kind)
    }

    private static func defaultKind(_ step: Step) -> Kind {
        switch step {
        case .connect: return .connectionRefused
        case .handshake, .netConnection, .createStream: return .handshakeFailed
        case .publish: return .rejected
        case .send: return .networkLost
        }
    }
}
