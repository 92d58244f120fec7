import RTMP
import SafeText
import SRT

/// Why a push failed, whatever its protocol: the step, a sentence, and a kind to act on. Owned by
/// LivePush; the RTMP client's `RTMPError` and SRT's `SRTError` map into it (`init(_:)`,
/// `init(_:step:)`), so the status events, retries and codes are the same for every destination.
public struct PushError: Error, Equatable, CustomStringConvertible {
    /// The step that failed. RTMP has them all; SRT connects and sends.
    public enum Step: String, Sendable {
        case connect = "connecting"
        case handshake
        case netConnection = "NetConnection.connect"
        case createStream
        case publish
        case send = "sending media"
    }

    /// What kind of failure it was, for an application deciding what to tell the user (each has
    /// its `LivePushErrorCode`).
    public enum Kind: String, Sendable {
        /// The host name did not resolve.
        case dnsFailed
        /// Nothing listens on the host and port.
        case connectionRefused
        /// The server did not answer a step in time (or the network dropped packets).
        case timedOut
        /// The server broke off or garbled the handshake or a command.
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
        /// srt://: the listener refused the passphrase, or wants one that was not given (no retries).
        case passphraseRejected
        /// The server sent what its protocol does not allow; a new connection may reach one that behaves.
        case protocolViolation
        /// A call our own sender made out of order: not the server's doing.
        case wrongState

        /// Whether trying again cannot help: the server refused, or the TLS or SRT setup is wrong.
        public var isPermanent: Bool {
            switch self {
            case .rejected, .certificateUntrusted, .certificateNameMismatch, .certificateExpired, .notTLS,
                 .caFileUnreadable, .passphraseRejected:
                true
            default: false
            }
        }
    }

    public let step: Step
    public let detail: String
    public let kind: Kind
    public var description: String { "\(step.rawValue): \(detail)" }

    public init(step: Step, detail: String, kind: Kind) {
        self.step = step
        self.detail = detail
        self.kind = kind
    }

    /// The RTMP client's failure, step for step and kind for kind.
    init(_ error: RTMPError) {
        let step: Step = switch error.step {
        case .connect: .connect
        case .handshake: .handshake
        case .netConnection: .netConnection
        case .createStream: .createStream
        case .publish: .publish
        case .send: .send
        }
        let kind: Kind = switch error.kind {
        case .dnsFailed: .dnsFailed
        case .connectionRefused: .connectionRefused
        case .timedOut: .timedOut
        case .handshakeFailed: .handshakeFailed
        case .rejected: .rejected
        case .networkLost: .networkLost
        case .certificateUntrusted: .certificateUntrusted
        case .certificateNameMismatch: .certificateNameMismatch
        case .certificateExpired: .certificateExpired
        case .notTLS: .notTLS
        case .tlsHandshakeFailed: .tlsHandshakeFailed
        case .caFileUnreadable: .caFileUnreadable
        case .protocolViolation: .protocolViolation
        case .wrongState: .wrongState
        }
        self.init(step: step, detail: error.detail, kind: kind)
    }

    /// SRT's failure during `step`.
    init(_ error: SRTError, step: Step) {
        let kind: Kind = switch error.kind {
        case .dnsFailed: .dnsFailed
        case .timedOut: .timedOut
        case .passphraseRejected: .passphraseRejected
        case .rejected: .rejected
        case .networkLost, .setupFailed: .networkLost
        }
        self.init(step: step, detail: error.description, kind: kind)
    }

    /// The same failure with its detail, which may quote the server, neutralised (`UntrustedText`).
    var neutralised: PushError {
        guard UntrustedText.needsNeutralising(detail) || detail.unicodeScalars.count > Self.maxDetailScalars else {
            return self
        }
        return PushError(step: step, detail: UntrustedText.neutralised(detail, maxScalars: Self.maxDetailScalars),
                         kind: kind)
    }

    /// Our sentence plus a server's description: longer than a helper's text, still capped.
    static let maxDetailScalars = 600
}

/// What the protocol under a destination measured (SRT's `srt_bstats`; RTMP over TCP gives none
/// yet): one value type for every connection, so the statistics never ask which protocol it was.
struct TransportFigures: Sendable, Equatable {
    var rttMs = 0.0
    /// Packets the receiver reported lost, retransmitted, and dropped as too late to send.
    var packetsLost = 0
    var packetsRetransmitted = 0
    var packetsDropped = 0
    var packetsSent = 0
    var sendRateKbps = 0
    /// Packets reported lost, in percent of the packets sent (0 when nothing was sent).
    var lossPercent: Int { packetsSent > 0 ? packetsLost * 100 / packetsSent : 0 }

    init() {}

    init(_ statistics: SRTStatistics) {
        rttMs = statistics.rttMs
        packetsLost = statistics.packetsLost
        packetsRetransmitted = statistics.packetsRetransmitted
        packetsDropped = statistics.packetsDropped
        packetsSent = statistics.packetsSent
        sendRateKbps = statistics.sendRateKbps
    }
}
