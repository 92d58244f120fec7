import FLV
import Glibc
import Transport

/// Why publishing failed; each case names the step.
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
        /// srt://: the listener refused the passphrase, or wants one that was not given (no retries).
        case passphraseRejected

        /// Whether trying again cannot help: the server refused, or the TLS setup is wrong.
        public var isPermanent: Bool {
            switch self {
            case .rejected, .certificateUntrusted, .certificateNameMismatch, .certificateExpired, .notTLS,
                 .caFileUnreadable, .passphraseRejected:
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

    public let step: Step
    public let detail: String
    public let kind: Kind
    public var description: String { "\(step.rawValue): \(detail)" }

    public init(step: Step, detail: String, kind: Kind? = nil) {
        self.step = step
        self.detail = detail
        self.kind = kind ?? Self.defaultKind(step)
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

/// An RTMP client that publishes one stream (the flow of FFmpeg's rtmpproto and OBS): the
/// C0–C2/S0–S2 handshake, a 4096-byte chunk size, connect, releaseStream, FCPublish,
/// createStream and publish with transaction ids matched to `_result`, `_error` and `onStatus`,
/// then FLV tag bodies as RTMP messages. Not thread-safe: one sender thread.
public final class RTMPPublisher {
    public let url: RTMPURL
    private let socket: any ByteStream
    private var streamID: UInt32 = 0
    private var nextTransactionID = 1.0
    private var receiveChunkSize = 128
    private let sendChunkSize = 4096
    private var windowAckSize: UInt64 = 2_500_000
    private var acknowledged: UInt64 = 0
    /// Incoming messages being assembled, by chunk stream id.
    private var partial: [UInt32: IncomingMessage] = [:]
    private var lastHeaders: [UInt32: IncomingHeader] = [:]
    /// The chunks of the message being sent, reused from message to message (no allocation per packet).
    private var outgoing: [UInt8] = []

    /// Connects, shakes hands and publishes `url`'s stream key; every step has `timeoutMs`.
    /// `sendBufferBytes` sizes the socket's send buffer (the kernel doubles it): keep it to a
    /// fraction of a second of the stream, so that a slow network shows as a backlog in the
    /// caller's queue instead of seconds of latency hidden in the kernel. For rtmps:// the
    /// connection is TLS, verified against the system CA store and `caFile` (PEM) when given.
    public init(url: RTMPURL, caFile: String? = nil, timeoutMs: Int = 5000,
                sendBufferBytes: Int = 256 * 1024) throws(RTMPError)
    {
        self.url = url
        do {
            socket = try openByteStream(host: url.host, port: url.port, security: url.isSecure ? .tls(caFile: caFile) : .none,
                                        timeoutMs: timeoutMs, sendBufferBytes: sendBufferBytes)
        } catch {
            throw RTMPError(step: .connect, detail: error.description, kind: RTMPError.Kind(error.kind))
        }
        try handshake()
        try send(message: RTMPMessage(type: .setChunkSize, streamID: 0, timestamp: 0,
                                      payload: BigEndian.bytes(UInt32(sendChunkSize))), chunkStream: 2, step: .netConnection)
        try connectApplication()
        try createAndPublishStream()
    }

    // MARK: Handshake

    private func handshake() throws(RTMPError) {
        var c0c1: [UInt8] = [0x03]
        c0c1 += [0, 0, 0, 0, 0, 0, 0, 0]  // time, zero
        c0c1 += (0..<1528).map { _ in UInt8.random(in: 0...255) }
        do throws(TransportError) {
            try socket.write(c0c1, step: "handshake C0+C1")
            let s0s1 = try socket.read(1 + 1536, step: "handshake S0+S1")
            guard s0s1[0] == 0x03 else {
                throw TransportError("the server speaks RTMP version \(s0s1[0]), not 3", kind: .protocolError)
            }
            try socket.write(Array(s0s1[1...]), step: "handshake C2")  // C2 echoes S1
            _ = try socket.read(1536, step: "handshake S2")
        } catch {
            throw RTMPError(step: .handshake, detail: error.description, kind: RTMPError.Kind(error.kind))
        }
    }

    // MARK: Commands

    private func connectApplication() throws(RTMPError) {
        let transaction = takeTransactionID()
        try sendCommand([.string("connect"), .number(transaction), .object([
            ("app", .string(url.app)), ("type", .string("nonprivate")), ("flashVer", .string("FMLE/3.0 (compatible; LivePush)")),
            ("tcUrl", .string(url.tcURL)),
        ])], streamID: 0, step: .netConnection)
        let reply = try awaitResult(transaction, step: .netConnection)
        guard reply.name == "_result" else {
            throw RTMPError(step: .netConnection, detail: "the server refused the application '\(url.app)': "
                + describe(reply.arguments))
        }
    }

    private func createAndPublishStream() throws(RTMPError) {
        try sendCommand([.string("releaseStream"), .number(takeTransactionID()), .null, .string(url.streamKey)],
                        streamID: 0, step: .createStream)
        try sendCommand([.string("FCPublish"), .number(takeTransactionID()), .null, .string(url.streamKey)],
                        streamID: 0, step: .createStream)
        let create = takeTransactionID()
        try sendCommand([.string("createStream"), .number(create), .null], streamID: 0, step: .createStream)
        let created = try awaitResult(create, step: .createStream)
        guard created.name == "_result", let id = created.arguments.last?.numberValue else {
            throw RTMPError(step: .createStream, detail: "no stream id in the answer: \(describe(created.arguments))")
        }
        streamID = UInt32(id)
        try sendCommand([.string("publish"), .number(takeTransactionID()), .null, .string(url.streamKey),
                         .string("live")], streamID: streamID, step: .publish)
        while true {
            let status = try readCommand(step: .publish)
            guard status.name == "onStatus", let info = status.arguments.last else { continue }
            let code = info["code"]?.stringValue ?? ""
            if code == "NetStream.Publish.Start" { return }
            if code.hasPrefix("NetStream.Publish.") || info["level"]?.stringValue == "error" {
                let reason = code == "NetStream.Publish.BadName"
                    ? "the server refused the stream key (\(code)): a stream is already being published with it"
                    : "the server refused to publish (\(code)): \(serverText(info["description"]?.stringValue ?? ""))"
                throw RTMPError(step: .publish, detail: reason)
            }
        }
    }

    /// `@setDataFrame onMetaData` with `fields`.
    public func sendMetadata(_ fields: [(String, AMF0Value)]) throws(RTMPError) {
        let payload = AMF0.encode([.string("@setDataFrame"), .string("onMetaData"), .ecmaArray(fields)])
        try send(message: RTMPMessage(type: .dataAMF0, streamID: streamID, timestamp: 0, payload: payload),
                 chunkStream: 4, step: .send)
    }

    /// One FLV video tag body (as `FLV.avcVideoBody` makes) at `timestampMs`.
    public func sendVideo(_ body: [UInt8], timestampMs: UInt32) throws(RTMPError) {
        try send(message: RTMPMessage(type: .video, streamID: streamID, timestamp: timestampMs, payload: body),
                 chunkStream: 6, step: .send)
        try acknowledgeIfNeeded()
    }

    /// One FLV audio tag body at `timestampMs`.
    public func sendAudio(_ body: [UInt8], timestampMs: UInt32) throws(RTMPError) {
        try send(message: RTMPMessage(type: .audio, streamID: streamID, timestamp: timestampMs, payload: body),
                 chunkStream: 5, step: .send)
    }

    /// Breaks the connection from another thread: a send blocked on a stalled network fails
    /// at once instead of after its timeout.
    public func abort() { socket.abort() }

    /// FCUnpublish and deleteStream; the connection closes when the publisher goes away.
    public func finish() {
        try? sendCommand([.string("FCUnpublish"), .number(takeTransactionID()), .null, .string(url.streamKey)],
                         streamID: 0, step: .send)
        try? sendCommand([.string("deleteStream"), .number(takeTransactionID()), .null, .number(Double(streamID))],
                         streamID: 0, step: .send)
    }

    private func takeTransactionID() -> Double {
        defer { nextTransactionID += 1 }
        return nextTransactionID
    }

    private func sendCommand(_ values: [AMF0Value], streamID: UInt32, step: RTMPError.Step) throws(RTMPError) {
        try send(message: RTMPMessage(type: .commandAMF0, streamID: streamID, timestamp: 0, payload: AMF0.encode(values)),
                 chunkStream: 3, step: step)
    }

    /// Text from the server, which may quote the stream name: the key never leaves in an error.
    private func serverText(_ text: String) -> String {
        let key = url.streamKey.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url.streamKey
        return key.isEmpty ? text : text.replacing(key, with: "****")
    }

    private func describe(_ values: [AMF0Value]) -> String {
        if let info = values.last, let code = info["code"]?.stringValue {
            return "\(code) \(serverText(info["description"]?.stringValue ?? ""))"
        }
        return "\(values.count) values"
    }

    // MARK: Chunk stream out

    /// Splits a message into chunks: a type-0 header, then type-3 continuation headers.
    private func send(message: RTMPMessage, chunkStream: UInt8, step: RTMPError.Step) throws(RTMPError) {
        var bytes = outgoing
        outgoing = []  // `bytes` is its only holder now: appending reuses its storage
        defer { outgoing = bytes }
        bytes.removeAll(keepingCapacity: true)
        bytes.reserveCapacity(message.payload.count + 18 + message.payload.count / sendChunkSize)
        let extended = message.timestamp >= 0xFF_FFFF
        bytes.append(chunkStream)  // fmt 0
        BigEndian.appendUInt24(extended ? 0xFF_FFFF : message.timestamp, to: &bytes)
        BigEndian.appendUInt24(UInt32(message.payload.count), to: &bytes)
        bytes.append(message.type.rawValue)
        withUnsafeBytes(of: message.streamID.littleEndian) { bytes.append(contentsOf: $0) }  // little-endian, as specified
        if extended { bytes += BigEndian.bytes(message.timestamp) }
        var offset = 0
        while offset < message.payload.count || offset == 0 {
            if offset > 0 {
                bytes.append(0xC0 | chunkStream)  // fmt 3
                if extended { bytes += BigEndian.bytes(message.timestamp) }
            }
            let end = min(message.payload.count, offset + sendChunkSize)
            bytes += message.payload[offset..<end]
            offset = end
            if message.payload.isEmpty { break }
        }
        do {
            try socket.write(bytes, step: step.rawValue)
        } catch {
            throw RTMPError(step: step, detail: error.description, kind: Self.kind(of: error, at: step))
        }
    }

    private func acknowledgeIfNeeded() throws(RTMPError) {
        // The server only needs acknowledgements for what it sends us; publishing, that is little.
        if socket.bytesReceived - acknowledged >= windowAckSize / 2 {
            acknowledged = socket.bytesReceived
            try send(message: RTMPMessage(type: .acknowledgement, streamID: 0, timestamp: 0,
                                          payload: BigEndian.bytes(UInt32(truncatingIfNeeded: socket.bytesReceived))),
                     chunkStream: 2, step: .send)
        }
    }

    // MARK: Chunk stream in

    private struct IncomingHeader {
        var timestamp: UInt32 = 0
        var length = 0
        var type: UInt8 = 0
        var streamID: UInt32 = 0
    }

    private struct IncomingMessage {
        var header: IncomingHeader
        var payload: [UInt8] = []
    }

    private func awaitResult(_ transaction: Double, step: RTMPError.Step) throws(RTMPError)
        -> (name: String, arguments: [AMF0Value])
    {
        while true {
            let command = try readCommand(step: step)
            if (command.name == "_result" || command.name == "_error"), command.transaction == transaction {
                return (command.name, command.arguments)
            }
        }
    }

    /// The next AMF0 command from the server, handling protocol control messages on the way.
    private func readCommand(step: RTMPError.Step) throws(RTMPError)
        -> (name: String, transaction: Double, arguments: [AMF0Value])
    {
        while true {
            let message = try readMessage(step: step)
            switch message.header.type {
            case 1:  // Set Chunk Size
                receiveChunkSize = Int(BigEndian.value(message.payload.prefix(4)) & 0x7FFF_FFFF)
            case 5:  // Window Acknowledgement Size
                windowAckSize = UInt64(BigEndian.value(message.payload.prefix(4)))
            case 4:  // User Control: answer a ping request (event 6) with a ping response (7)
                if message.payload.count >= 6, message.payload[1] == 6 {
                    try send(message: RTMPMessage(type: .userControl, streamID: 0, timestamp: 0,
                                                  payload: [0, 7] + message.payload[2..<6]), chunkStream: 2, step: step)
                }
            case 20:  // AMF0 command
                let values: [AMF0Value]
                do { values = try AMF0.decodeAll(message.payload) } catch {
                    throw RTMPError(step: step, detail: "unreadable answer: \(error)")
                }
                guard let name = values.first?.stringValue else { continue }
                let transaction = values.count > 1 ? values[1].numberValue ?? 0 : 0
                return (name, transaction, Array(values.dropFirst(2)))
            default:
                continue
            }
        }
    }

    private func readMessage(step: RTMPError.Step) throws(RTMPError) -> IncomingMessage {
        do throws(TransportError) {
            while true {
                let first = try socket.read(1, step: step.rawValue)[0]
                let format = first >> 6
                var chunkStream = UInt32(first & 0x3F)
                if chunkStream == 0 { chunkStream = 64 + UInt32(try socket.read(1, step: step.rawValue)[0]) }
                else if chunkStream == 1 {
                    let two = try socket.read(2, step: step.rawValue)
                    chunkStream = 64 + UInt32(two[0]) + UInt32(two[1]) * 256
                }
                var header = lastHeaders[chunkStream] ?? IncomingHeader()
                let headerBytes = [11, 7, 3, 0][Int(format)]
                let fields = try socket.read(headerBytes, step: step.rawValue)
                var timestampField: UInt32 = 0
                if headerBytes >= 3 { timestampField = BigEndian.value(fields.prefix(3)) }
                if headerBytes >= 7 {
                    header.length = Int(BigEndian.value(fields[3..<6]))
                    header.type = fields[6]
                }
                if headerBytes == 11 {
                    header.streamID = UInt32(fields[7]) | UInt32(fields[8]) << 8 | UInt32(fields[9]) << 16
                        | UInt32(fields[10]) << 24
                }
                if timestampField == 0xFF_FFFF {
                    timestampField = BigEndian.value(try socket.read(4, step: step.rawValue)[0..<4])
                }
                if format == 0 { header.timestamp = timestampField } else if format < 3 { header.timestamp &+= timestampField }
                lastHeaders[chunkStream] = header
                guard header.length <= 16 * 1024 * 1024 else {
                    throw TransportError("a server message of \(header.length) bytes is too large", kind: .protocolError)
                }
                var message = partial[chunkStream] ?? IncomingMessage(header: header)
                if message.payload.isEmpty { message.header = header }
                let count = min(receiveChunkSize, message.header.length - message.payload.count)
                message.payload += try socket.read(count, step: step.rawValue)
                if message.payload.count >= message.header.length {
                    partial[chunkStream] = nil
                    return message
                }
                partial[chunkStream] = message
            }
        } catch {
            throw RTMPError(step: step, detail: error.description, kind: Self.kind(of: error, at: step))
        }
    }

    /// A socket failure while sending media is the network's; during the setup a timeout stays
    /// a timeout and anything else is the step's own kind of failure.
    private static func kind(of failure: TransportError, at step: RTMPError.Step) -> RTMPError.Kind? {
        step == .send || failure.kind == .timedOut ? RTMPError.Kind(failure.kind) : nil
    }
}

/// An RTMP message to send.
struct RTMPMessage {
    enum MessageType: UInt8 {
        case setChunkSize = 1
        case acknowledgement = 3
        case userControl = 4
        case audio = 8
        case video = 9
        case dataAMF0 = 18
        case commandAMF0 = 20
    }

    let type: MessageType
    let streamID: UInt32
    let timestamp: UInt32
    let payload: [UInt8]
}
