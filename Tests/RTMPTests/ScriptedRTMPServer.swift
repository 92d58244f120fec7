import FLV
import Foundation
import Glibc

/// A TCP server on 127.0.0.1 of the tests' own that speaks just enough RTMP to lead our client to
/// the step under test, and then says what nginx-rtmp never would: a chunk size of 0, a window
/// of 0, extended timestamps on every chunk. It takes one connection and runs `script` on it on a
/// thread of its own. What the client sends is read strictly (`ClientMessage`): a type-3 chunk of
/// a message with an extended timestamp must repeat it, or the script fails.
final class ScriptedRTMPServer: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var outcome: Result<Void, any Error>?

    init(script: @escaping @Sendable (ScriptedRTMPConnection) throws -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0
        } }
        guard listening else {
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in
            let result = Result { () throws -> Void in
                let descriptor = accept(listener, nil, nil)
                guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                let connection = ScriptedRTMPConnection(descriptor: descriptor)
                defer { connection.close() }
                try script(connection)
            }
            lock.withLock { outcome = result }
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }

    /// `rtmp://127.0.0.1:PORT/live/KEY`.
    func url(key: String = "scripted-key") -> String { "rtmp://127.0.0.1:\(port)/live/\(key)" }

    /// Waits (polling) for the script to end and rethrows its error; throws if it has not ended
    /// within `timeoutSeconds`.
    func waitForScript(timeoutSeconds: Double = 20) throws {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            if let outcome = lock.withLock({ outcome }) { return try outcome.get() }
            Thread.sleep(forTimeInterval: 0.01)
        }
        throw ScriptError("the server's script did not end within \(timeoutSeconds) s")
    }
}

struct ScriptError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A message our client sent, as the server read it.
struct ClientMessage {
    let typeID: UInt8
    let chunkStream: UInt8
    let streamID: UInt32
    let timestamp: UInt32
    let payload: [UInt8]
    /// How many chunks it came in, and how many of them carried the extended timestamp.
    let chunks: Int
    let chunksWithExtendedTimestamp: Int

    /// The AMF0 values of a command (type 20).
    var command: [AMF0Value]? { typeID == 20 ? try? AMF0.decodeAll(payload) : nil }
    var commandName: String? { command?.first?.stringValue }
}

/// How the server writes its messages: the chunk size it splits them into and the timestamp it
/// gives them (0xFFFFFF and above go into the extended timestamp of every chunk).
struct ServerChunking {
    var chunkSize = 128
    var timestamp: UInt32 = 0
}

/// The server's side of one connection; used by the script's thread only.
final class ScriptedRTMPConnection {
    private let descriptor: Int32
    /// The client's chunk size, from its Set Chunk Size.
    private var clientChunkSize = 128
    var chunking = ServerChunking()

    init(descriptor: Int32) {
        self.descriptor = descriptor
        var timeout = timeval(tv_sec: 10, tv_usec: 0)  // a script waits at most this long for a byte
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() { Glibc.close(descriptor) }

    // MARK: Bytes

    func read(_ count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var received = 0
        while received < count {
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + received, count - received, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw ScriptError("the client went away (read \(received) of \(count) bytes)") }
            received += n
        }
        return buffer
    }

    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw ScriptError("sending to the client failed: errno \(errno)") }
            sent += n
        }
    }

    /// Reads until the client closes the connection (it gave up): true if it did within `seconds`.
    func clientCloses(within seconds: Int) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        while true {
            let n = recv(descriptor, &byte, 1, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    // MARK: Handshake

    /// C0+C1 in, S0+S1+S2 out, C2 in.
    func handshake() throws {
        let c0c1 = try read(1 + 1536)
        guard c0c1[0] == 3 else { throw ScriptError("C0 is version \(c0c1[0])") }
        var s1 = [UInt8](repeating: 0, count: 1536)
        for index in 8..<s1.count { s1[index] = UInt8(truncatingIfNeeded: index &* 31) }
        try write([3] + s1 + Array(c0c1[1...]))  // S0, S1, S2 (echoes C1)
        let c2 = try read(1536)
        guard c2 == s1 else { throw ScriptError("C2 does not echo S1") }
    }

    // MARK: The client's messages, read strictly

    /// The next message: fmt 0 then fmt 3 chunks, as our client writes them; anything else fails
    /// the script. A Set Chunk Size from the client is applied before it is returned.
    func readMessage() throws -> ClientMessage {
        let first = try read(1)
        guard first[0] >> 6 == 0 else { throw ScriptError("a message began with a type-\(first[0] >> 6) chunk") }
        let chunkStream = first[0] & 0x3F
        let header = try read(11)
        let field = BigEndian.value(header[0..<3])
        let length = Int(BigEndian.value(header[3..<6]))
        let streamID = UInt32(header[7]) | UInt32(header[8]) << 8 | UInt32(header[9]) << 16 | UInt32(header[10]) << 24
        var timestamp = field
        var extendedChunks = 0
        if field == 0xFF_FFFF {
            timestamp = BigEndian.value(try read(4))
            extendedChunks += 1
            guard timestamp >= 0xFF_FFFF else {
                throw ScriptError("extended timestamp \(timestamp) where the 3-byte field would do")
            }
        }
        var payload = try read(min(length, clientChunkSize))
        var chunks = 1
        while payload.count < length {
            let basic = try read(1)
            guard basic[0] == 0xC0 | chunkStream else {
                throw ScriptError("chunk \(chunks + 1) of a message on chunk stream \(chunkStream) has basic header "
                    + "\(basic[0])")
            }
            if field == 0xFF_FFFF {
                let repeated = BigEndian.value(try read(4))
                guard repeated == timestamp else {
                    throw ScriptError("type-3 chunk \(chunks + 1) repeats timestamp \(repeated), not \(timestamp)")
                }
                extendedChunks += 1
            }
            payload += try read(min(length - payload.count, clientChunkSize))
            chunks += 1
        }
        if header[6] == 1 { clientChunkSize = Int(BigEndian.value(payload.prefix(4))) }
        return ClientMessage(typeID: header[6], chunkStream: chunkStream, streamID: streamID, timestamp: timestamp,
                             payload: payload, chunks: chunks, chunksWithExtendedTimestamp: extendedChunks)
    }

    /// Reads messages until the command `name`; returns its values.
    func readCommand(_ name: String) throws -> [AMF0Value] {
        while true {
            let message = try readMessage()
            if message.commandName == name, let values = message.command { return values }
        }
    }

    // MARK: The server's messages

    /// `payload` as one message in chunks of `chunking.chunkSize`: a type-0 header (or type 1 when
    /// `format` says so) and type-3 continuations, each with the extended timestamp when the
    /// timestamp needs one.
    func send(type: UInt8, chunkStream: UInt8 = 3, streamID: UInt32 = 0, format: UInt8 = 0, payload: [UInt8]) throws {
        let extended = chunking.timestamp >= 0xFF_FFFF
        var bytes: [UInt8] = [format << 6 | chunkStream]
        BigEndian.appendUInt24(extended ? 0xFF_FFFF : chunking.timestamp, to: &bytes)
        BigEndian.appendUInt24(UInt32(payload.count), to: &bytes)
        bytes.append(type)
        if format == 0 { withUnsafeBytes(of: streamID.littleEndian) { bytes.append(contentsOf: $0) } }
        if extended { BigEndian.append(chunking.timestamp, to: &bytes) }
        var offset = 0
        repeat {
            if offset > 0 {
                bytes.append(0xC0 | chunkStream)
                if extended { BigEndian.append(chunking.timestamp, to: &bytes) }
            }
            let end = min(payload.count, offset + chunking.chunkSize)
            bytes += payload[offset..<end]
            offset = end
        } while offset < payload.count
        try write(bytes)
    }

    /// A protocol control message (chunk stream 2, message stream 0) with a 4-byte value.
    func sendControl(type: UInt8, value: UInt32) throws {
        try send(type: type, chunkStream: 2, payload: BigEndian.bytes(value))
    }

    /// Set Chunk Size: the server's chunks are `size` bytes from here on (when in range).
    func setChunkSize(_ size: UInt32) throws {
        try sendControl(type: 1, value: size)
        if (1...0x7FFF_FFFF).contains(size) { chunking.chunkSize = Int(size) }
    }

    func sendCommand(_ values: [AMF0Value], streamID: UInt32 = 0, format: UInt8 = 0) throws {
        try send(type: 20, streamID: streamID, format: format, payload: AMF0.encode(values))
    }

    // MARK: Steps

    /// connect's `_result`, with a description long enough to span several chunks.
    func answerConnect(format: UInt8 = 0) throws {
        let connect = try readCommand("connect")
        let transaction = connect.count > 1 ? connect[1] : .number(1)
        try sendCommand([.string("_result"), transaction,
                         .object([("fmsVer", .string("FMS/3,0,1,123")), ("capabilities", .number(31))]),
                         .object([("level", .string("status")), ("code", .string("NetConnection.Connect.Success")),
                                  ("description",
                                   .string("Connection succeeded. " + String(repeating: "0123456789", count: 30))),
                                  ("objectEncoding", .number(0))])], format: format)
    }

    /// createStream's `_result` with stream id 1 (releaseStream and FCPublish pass unanswered).
    func answerCreateStream(format: UInt8 = 0) throws {
        let create = try readCommand("createStream")
        try sendCommand([.string("_result"), create.count > 1 ? create[1] : .number(4), .null, .number(1)],
                        format: format)
    }

    /// publish's `onStatus` NetStream.Publish.Start, on message stream 1.
    func answerPublish() throws {
        _ = try readCommand("publish")
        try sendCommand([.string("onStatus"), .number(0), .null,
                         .object([("level", .string("status")), ("code", .string("NetStream.Publish.Start")),
                                  ("description", .string("Start publishing"))])], streamID: 1)
    }

    /// The whole exchange, from the handshake to publishing.
    func leadToPublishing() throws {
        try handshake()
        try answerConnect()
        try answerCreateStream()
        try answerPublish()
    }
}
