import FLV
import Glibc
import SafeText
import Transport

/// An RTMP client that publishes one stream, as a state machine in the manner of FFmpeg's
/// rtmpproto.c: the C0–C2/S0–S2 handshake, a 4096-byte chunk size, connect, releaseStream,
/// FCPublish, createStream and publish with transaction ids matched to `_result`, `_error` and
/// `onStatus`, then FLV tag bodies as RTMP messages. The server's protocol control messages are
/// checked on the way (`RTMPError.Violation`).
///
/// Owned by one sender thread: every call but `abort` comes from it, and so does every change of
/// `state`. `abort` may come from any thread; it only breaks the socket.
public final class RTMPPublisher {
    /// Where the publisher is in its life (FFmpeg's `ClientState` for a publishing client).
    /// `init` passes through the first five in order and returns in `publishing`, or throws;
    /// each call says which state it needs, and a call in another state is refused with
    /// `RTMPError.Kind.wrongState`.
    ///
    ///     connected --C0+C1, S0+S1, C2, S2; Set Chunk Size sent--> handshaked
    ///     handshaked --connect, _result--> applicationConnected
    ///     applicationConnected --releaseStream, FCPublish, createStream, _result--> streamCreated
    ///     streamCreated --publish, onStatus NetStream.Publish.Start--> publishing
    ///     publishing --sendMetadata/sendVideo/sendAudio--> publishing
    ///     publishing --finish(): FCUnpublish, deleteStream--> finished
    ///     any state but finished --a read or write fails, the server breaks the protocol,
    ///                               refuses, or answers garbage--> failed
    public enum State: String, Sendable {
        /// The TCP (or TLS) connection is open; nothing has been said yet (FFmpeg's STATE_START).
        case connected
        /// The handshake is done and our Set Chunk Size sent: the chunk stream carries messages
        /// (STATE_HANDSHAKED).
        case handshaked
        /// connect was answered `_result`: the server accepted the application.
        case applicationConnected
        /// releaseStream and FCPublish were sent and createStream answered with a stream id
        /// (where FFmpeg's STATE_FCPUBLISH ends).
        case streamCreated
        /// publish was answered `NetStream.Publish.Start`: metadata, video and audio may be sent
        /// (STATE_PUBLISHING).
        case publishing
        /// `finish()` sent FCUnpublish and deleteStream: nothing more is sent (STATE_STOPPED).
        case finished
        /// A read or write failed, or the server broke the protocol or refused: the connection
        /// is unusable; nothing more is sent.
        case failed
    }

    public let url: RTMPURL
    /// Where the publisher is; changed only by the owning thread's calls.
    public private(set) var state: State
    private let socket: any ByteStream
    private var streamID: UInt32 = 0
    private var nextTransactionID = 1.0
    private var writer = ChunkWriter(chunkSize: 4096)
    private var reader = ChunkReader()
    /// The server's Window Acknowledgement Size: an acknowledgement is due after half of it.
    private var windowAckSize: UInt64 = 2_500_000
    private var acknowledged: UInt64 = 0

    /// Connects, shakes hands and publishes `url`'s stream key; every step has `timeoutMs`.
    /// `sendBufferBytes` sizes the socket's send buffer (the kernel doubles it): keep it to a
    /// fraction of a second of the stream, so that a slow network shows as a backlog in the
    /// caller's queue instead of seconds of latency hidden in the kernel. For rtmps:// the
    /// connection is TLS, verified against the system CA store and `caFile` (PEM) when given.
    /// Returns in `State.publishing`.
    public init(url: RTMPURL, caFile: String? = nil, timeoutMs: Int = 5000,
                sendBufferBytes: Int = 256 * 1024) throws(RTMPError)
    {
        self.url = url
        do {
            socket = try openByteStream(host: url.host, port: url.port,
                                        security: url.isSecure ? .tls(caFile: caFile) : .none,
                                        timeoutMs: timeoutMs, sendBufferBytes: sendBufferBytes)
        } catch {
            throw RTMPError(step: .connect, transport: error)
        }
        state = .connected
        try failing { () throws(RTMPError) in
            try handshake()
            try connectApplication()
            try createStream()
            try publish()
        }
    }

    // MARK: Media (state publishing)

    /// `@setDataFrame onMetaData` with `fields`.
    public func sendMetadata(_ fields: [(String, AMF0Value)]) throws(RTMPError) {
        let payload = AMF0.encode([.string("@setDataFrame"), .string("onMetaData"), .ecmaArray(fields)])
        try sendMedia(.dataAMF0, payload, timestampMs: 0, on: 4, call: "sendMetadata")
    }

    /// One FLV video tag body (as `FLV.avcVideoBody` makes) at `timestampMs`.
    public func sendVideo(_ body: [UInt8], timestampMs: UInt32) throws(RTMPError) {
        try sendMedia(.video, body, timestampMs: timestampMs, on: 6, call: "sendVideo")
    }

    /// One FLV audio tag body at `timestampMs`.
    public func sendAudio(_ body: [UInt8], timestampMs: UInt32) throws(RTMPError) {
        try sendMedia(.audio, body, timestampMs: timestampMs, on: 5, call: "sendAudio")
    }

    /// `payload` as a message of the published stream: refused unless `publishing`.
    private func sendMedia(_ type: MessageType, _ payload: [UInt8], timestampMs: UInt32, on chunkStream: UInt8,
                           call: String) throws(RTMPError)
    {
        try require(.publishing, for: call, step: .send)
        try failing { () throws(RTMPError) in
            try send(RTMPMessage(type: type, streamID: streamID, timestamp: timestampMs, payload: payload),
                     on: chunkStream, step: .send)
            if type == .video { try acknowledgeIfNeeded() }
        }
    }

    /// Breaks the connection from another thread: a send blocked on a stalled network fails
    /// at once instead of after its timeout (and the publisher is then `failed`).
    public func abort() { socket.abort() }

    /// The connection's round trip as the kernel measures it (TCP_INFO's smoothed RTT and its mean
    /// deviation, in ms, under TLS too); nil when it cannot be read. Any thread may ask.
    public var roundTripMs: (rtt: Double, variation: Double)? {
        socket.roundTrip().map { (Double($0.rttUs) / 1000, Double($0.rttVarianceUs) / 1000) }
    }

    /// In `publishing`: FCUnpublish and deleteStream, and the publisher is `finished` (a failure
    /// to send them is not reported: the connection closes when the publisher goes away). In any
    /// other state there is no stream to end, and it does nothing.
    public func finish() {
        guard state == .publishing else { return }
        state = .finished
        try? sendCommand([.string("FCUnpublish"), .number(takeTransactionID()), .null, .string(url.streamKey)],
                         streamID: 0, step: .send)
        try? sendCommand([.string("deleteStream"), .number(takeTransactionID()), .null, .number(Double(streamID))],
                         streamID: 0, step: .send)
    }

    // MARK: States

    /// Refuses `call` unless the publisher is in `expected`.
    private func require(_ expected: State, for call: String, step: RTMPError.Step) throws(RTMPError) {
        guard state != expected else { return }
        let why = switch state {
        case .finished: "finish() has ended the stream"
        case .failed: "the connection failed earlier"
        case .publishing: "it is publishing already"
        default: "the steps run in order: handshake, connect, createStream, publish, media, finish()"
        }
        throw RTMPError(step: step, detail: "\(call) refused in state \(state.rawValue) (it needs "
            + "\(expected.rawValue)): \(why); publish again with a new RTMPPublisher", kind: .wrongState)
    }

    /// Runs `body`; when it throws, the publisher is `failed`.
    private func failing(_ body: () throws(RTMPError) -> Void) throws(RTMPError) {
        do { try body() } catch {
            state = .failed
            throw error
        }
    }

    // MARK: Handshake (connected -> handshaked)

    private func handshake() throws(RTMPError) {
        try require(.connected, for: "handshake", step: .handshake)
        var c0c1: [UInt8] = [0x03]
        c0c1 += [0, 0, 0, 0, 0, 0, 0, 0]  // time, zero
        c0c1 += (0..<1528).map { _ in UInt8.random(in: 0...255) }
        func exchange(_ part: String, _ body: () throws(TransportError) -> Void) throws(RTMPError) {
            do { try body() } catch { throw RTMPError(step: .handshake, transport: error, part: part) }
        }
        var s0s1: [UInt8] = []
        try exchange("C0+C1") { () throws(TransportError) in try socket.write(c0c1, step: "C0+C1") }
        // S0 alone first: a server that is not RTMP (a web server's "HTTP/1.1 400", a TLS alert) answers
        // less than S0+S1 and closes; its first byte says what it is.
        var s0: [UInt8] = []
        try exchange("S0+S1") { () throws(TransportError) in s0 = try socket.read(1, step: "S0+S1") }
        if let other = Self.notRTMP(s0[0]) {
            throw RTMPError(step: .handshake, detail: "the server at \(url.host):\(url.port) answered \(other), not RTMP: "
                + "check the host and port (RTMP's is 1935)" + (other == "TLS" ? ", or use rtmps://" : ""),
                kind: .handshakeFailed)
        }
        try exchange("S0+S1") { () throws(TransportError) in s0s1 = try s0 + socket.read(1536, step: "S0+S1") }
        guard s0s1[0] == 0x03 else {
            throw RTMPError(step: .handshake, detail: "the server speaks RTMP version \(s0s1[0]), not 3",
                            kind: .handshakeFailed)
        }
        // C2 echoes S1.
        try exchange("C2") { () throws(TransportError) in try socket.write(Array(s0s1[1...]), step: "C2") }
        try exchange("S2") { () throws(TransportError) in _ = try socket.read(1536, step: "S2") }
        state = .handshaked
        let chunkSize = BigEndian.bytes(UInt32(writer.chunkSize))
        try send(RTMPMessage(type: .setChunkSize, streamID: 0, timestamp: 0, payload: chunkSize), on: 2,
                 step: .netConnection)
    }

    /// What a server whose first byte is `byte` speaks, when it is plainly not RTMP: "HTTP" ('H' of
    /// "HTTP/1.1"), "TLS" (a record: alert 0x15, handshake 0x16).
    static func notRTMP(_ byte: UInt8) -> String? {
        switch byte {
        case UInt8(ascii: "H"): "HTTP"
        case 0x15, 0x16: "TLS"
        default: nil
        }
    }

    // MARK: Commands (handshaked -> applicationConnected -> streamCreated -> publishing)

    private func connectApplication() throws(RTMPError) {
        try require(.handshaked, for: "connect", step: .netConnection)
        let transaction = takeTransactionID()
        try sendCommand([.string("connect"), .number(transaction), .object([
            ("app", .string(url.app)), ("type", .string("nonprivate")),
            ("flashVer", .string("FMLE/3.0 (compatible; LivePush)")), ("tcUrl", .string(url.tcURL)),
        ])], streamID: 0, step: .netConnection)
        let reply = try awaitResult(transaction, step: .netConnection)
        guard reply.name == "_result" else {
            throw RTMPError(step: .netConnection, detail: "the server refused the application '\(url.app)': "
                + describe(reply.arguments))
        }
        state = .applicationConnected
    }

    private func createStream() throws(RTMPError) {
        try require(.applicationConnected, for: "createStream", step: .createStream)
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
        state = .streamCreated
    }

    private func publish() throws(RTMPError) {
        try require(.streamCreated, for: "publish", step: .publish)
        try sendCommand([.string("publish"), .number(takeTransactionID()), .null, .string(url.streamKey),
                         .string("live")], streamID: streamID, step: .publish)
        while true {
            let status = try readCommand(step: .publish)
            guard status.name == "onStatus", let info = status.arguments.last else { continue }
            let code = info["code"]?.stringValue ?? ""
            if code == "NetStream.Publish.Start" { break }
            if code.hasPrefix("NetStream.Publish.") || info["level"]?.stringValue == "error" {
                let reason = code == "NetStream.Publish.BadName"
                    ? "the server refused the stream key (\(code)): a stream is already being published with it"
                    : "the server refused to publish (\(code)): \(serverText(info["description"]?.stringValue ?? ""))"
                throw RTMPError(step: .publish, detail: reason)
            }
        }
        state = .publishing
    }

    private func takeTransactionID() -> Double {
        defer { nextTransactionID += 1 }
        return nextTransactionID
    }

    private func sendCommand(_ values: [AMF0Value], streamID: UInt32, step: RTMPError.Step) throws(RTMPError) {
        try send(RTMPMessage(type: .commandAMF0, streamID: streamID, timestamp: 0, payload: AMF0.encode(values)),
                 on: 3, step: step)
    }

    /// Text from the server, which may quote the stream name: the key never leaves in an error.
    private func serverText(_ text: String) -> String {
        let key = url.streamKey.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url.streamKey
        return Redaction.mask(key, in: text)
    }

    private func describe(_ values: [AMF0Value]) -> String {
        if let info = values.last, let code = info["code"]?.stringValue {
            return "\(code) \(serverText(info["description"]?.stringValue ?? ""))"
        }
        return "\(values.count) values"
    }

    // MARK: Messages out

    private func send(_ message: RTMPMessage, on chunkStream: UInt8, step: RTMPError.Step) throws(RTMPError) {
        do {
            try writer.write(message, on: chunkStream, to: socket, step: step.rawValue)
        } catch {
            throw RTMPError(step: step, transport: error)
        }
    }

    private func acknowledgeIfNeeded() throws(RTMPError) {
        // The server only needs acknowledgements for what it sends us; publishing, that is little.
        if socket.bytesReceived - acknowledged >= windowAckSize / 2 {
            acknowledged = socket.bytesReceived
            try send(RTMPMessage(type: .acknowledgement, streamID: 0, timestamp: 0,
                                 payload: BigEndian.bytes(UInt32(truncatingIfNeeded: socket.bytesReceived))),
                     on: 2, step: .send)
        }
    }

    // MARK: Messages in

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
            let message: IncomingMessage
            do {
                message = try reader.next(from: socket, step: step.rawValue)
            } catch {
                switch error {
                case .transport(let failure): throw RTMPError(step: step, transport: failure)
                case .violation(let violation): throw RTMPError(step: step, violation: violation)
                }
            }
            switch message.type {
            case .commandAMF0:
                let values: [AMF0Value]
                do { values = try AMF0.decodeAll(message.payload) } catch {
                    throw RTMPError(step: step, detail: "unreadable answer: \(error)")
                }
                guard let name = values.first?.stringValue else { continue }
                let transaction = values.count > 1 ? values[1].numberValue ?? 0 : 0
                return (name, transaction, Array(values.dropFirst(2)))
            case .setChunkSize, .abort, .windowAcknowledgementSize, .userControl:
                try handleControl(message, step: step)
            default:
                continue  // acknowledgements, peer bandwidth (we send no more than the network takes), media, data
            }
        }
    }

    /// Set Chunk Size, Abort, Window Acknowledgement Size and User Control (ping), each checked
    /// as FFmpeg's handle_chunk_size, handle_client_bw and handle_ping check them.
    private func handleControl(_ message: IncomingMessage, step: RTMPError.Step) throws(RTMPError) {
        let payload = message.payload
        let tooShort = RTMPError(step: step,
                                 violation: .controlMessageTooShort(type: message.typeID, bytes: payload.count))
        guard payload.count >= (message.type == .userControl ? 2 : 4) else { throw tooShort }
        let value = BigEndian.value(payload.prefix(4))
        switch message.type {
        case .setChunkSize:
            guard (1...0x7FFF_FFFF).contains(value) else {
                throw RTMPError(step: step, violation: .chunkSizeOutOfRange(value))
            }
            reader.chunkSize = Int(value)
        case .abort:
            reader.discardMessage(on: value)
        case .windowAcknowledgementSize:
            guard value > 0 else { throw RTMPError(step: step, violation: .windowAcknowledgementSizeZero) }
            windowAckSize = UInt64(value)
        case .userControl:
            // A ping request (event 6) is answered with a ping response (7) carrying its timestamp.
            guard UInt16(payload[0]) << 8 | UInt16(payload[1]) == UserControlEvent.pingRequest.rawValue else { return }
            guard payload.count >= 6 else { throw tooShort }
            let response = UserControlEvent.pingResponse.rawValue
            let pong = [UInt8(response >> 8), UInt8(response & 0xFF)] + payload[2..<6]
            try send(RTMPMessage(type: .userControl, streamID: 0, timestamp: 0, payload: pong), on: 2, step: step)
        default:
            return
        }
    }
}
