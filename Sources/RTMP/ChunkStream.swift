import FLV
import Transport

/// RTMP message type ids (RTMP specification 5.4, 7.1).
enum MessageType: UInt8 {
    case setChunkSize = 1
    case abort = 2
    case acknowledgement = 3
    case userControl = 4
    case windowAcknowledgementSize = 5
    case setPeerBandwidth = 6
    case audio = 8
    case video = 9
    case dataAMF3 = 15
    case sharedObjectAMF3 = 16
    case commandAMF3 = 17
    case dataAMF0 = 18
    case sharedObjectAMF0 = 19
    case commandAMF0 = 20
    case aggregate = 22
}

/// User Control event types (RTMP specification 7.1.7) that a publisher answers.
enum UserControlEvent: UInt16 {
    case pingRequest = 6
    case pingResponse = 7
}

/// An RTMP message to send.
struct RTMPMessage {
    let type: MessageType
    let streamID: UInt32
    let timestamp: UInt32
    let payload: [UInt8]
}

/// A whole message from the server. Its type stays a raw id: a type this client does not know
/// is skipped, not refused.
struct IncomingMessage {
    let typeID: UInt8
    let streamID: UInt32
    let timestamp: UInt32
    let length: Int
    var payload: [UInt8] = []

    var type: MessageType? { MessageType(rawValue: typeID) }
}

/// A timestamp field of 0xFFFFFF in a chunk's header means that the value is in the 4-byte
/// extended timestamp after the header; the chunks of type 3 that follow such a header on the
/// same chunk stream carry the extended timestamp again (RTMP 5.3.1.3, as FFmpeg's rtmppkt.c and
/// nginx-rtmp write and read it).
private let extendedTimestampMarker: UInt32 = 0xFF_FFFF

/// Splits messages into chunks of `chunkSize` bytes: a type-0 header, then type-3 headers, each
/// with the extended timestamp when the message's timestamp needs one. The buffer is kept from
/// message to message (no allocation per packet). Owned by the publisher's sender thread.
struct ChunkWriter {
    let chunkSize: Int
    private var bytes: [UInt8] = []

    init(chunkSize: Int) {
        self.chunkSize = chunkSize
    }

    /// Writes `message` on `chunkStream` (2...63: one-byte basic headers).
    mutating func write(_ message: RTMPMessage, on chunkStream: UInt8, to socket: any ByteStream,
                        step: String) throws(TransportError)
    {
        bytes.removeAll(keepingCapacity: true)
        bytes.reserveCapacity(message.payload.count + 18 + message.payload.count / chunkSize * 5)
        let extended = message.timestamp >= extendedTimestampMarker
        bytes.append(chunkStream)  // fmt 0
        BigEndian.appendUInt24(extended ? extendedTimestampMarker : message.timestamp, to: &bytes)
        BigEndian.appendUInt24(UInt32(message.payload.count), to: &bytes)
        bytes.append(message.type.rawValue)
        // The message stream id is little-endian, as the specification has it.
        withUnsafeBytes(of: message.streamID.littleEndian) { bytes.append(contentsOf: $0) }
        if extended { BigEndian.append(message.timestamp, to: &bytes) }
        var offset = 0
        repeat {
            if offset > 0 {
                bytes.append(0xC0 | chunkStream)  // fmt 3
                if extended { BigEndian.append(message.timestamp, to: &bytes) }
            }
            let end = min(message.payload.count, offset + chunkSize)
            bytes += message.payload[offset..<end]
            offset = end
        } while offset < message.payload.count
        try socket.write(bytes, step: step)
    }
}

/// Reassembles the server's messages from its chunks (RTMP 5.3), checking what a chunk header
/// can get wrong: a type-2 or type-3 header with no header before it to take the length from, a
/// message beyond `maxMessageBytes`.
/// Reads the extended timestamp of type-3 chunks after a header that had one. Owned by the
/// publisher's sender thread.
struct ChunkReader {
    /// Why reading a message failed.
    enum Failure: Error {
        case transport(TransportError)
        case violation(RTMPError.Violation)
    }

    /// The most a publisher takes from its server in one message: it expects commands and control
    /// messages of a few hundred bytes (a message header can announce up to 16 MiB).
    static let maxMessageBytes = 1024 * 1024

    /// The server's chunk size: 128 until its Set Chunk Size, which the publisher checks.
    var chunkSize = 128

    /// What a chunk stream's next compressed header continues.
    private struct ChunkStreamState {
        var timestamp: UInt32 = 0
        /// The delta of the last type-1 or type-2 header; a type-3 chunk that begins a message adds it.
        var timestampDelta: UInt32 = 0
        var length = 0
        var typeID: UInt8 = 0
        var streamID: UInt32 = 0
        /// The last type 0, 1 or 2 header had an extended timestamp: its type-3 chunks carry it too.
        var hasExtendedTimestamp = false
        /// The message being assembled, if a chunk of it has come.
        var message: IncomingMessage?
    }

    private var chunkStreams: [UInt32: ChunkStreamState] = [:]

    /// The next whole message from `socket`; `step` names the reads for their errors.
    mutating func next(from socket: any ByteStream, step: String) throws(Failure) -> IncomingMessage {
        while true {
            if let message = try readChunk(from: socket, step: step) { return message }
        }
    }

    /// Abort Message: the partly received message of `chunkStream` is dropped.
    mutating func discardMessage(on chunkStream: UInt32) {
        chunkStreams[chunkStream]?.message = nil
    }

    /// One chunk; the message when this chunk completes it.
    private mutating func readChunk(from socket: any ByteStream, step: String) throws(Failure) -> IncomingMessage? {
        func read(_ count: Int) throws(Failure) -> [UInt8] {
            do { return try socket.read(count, step: step) } catch { throw .transport(error) }
        }
        let first = try read(1)[0]
        let format = first >> 6
        var chunkStream = UInt32(first & 0x3F)
        if chunkStream == 0 {
            chunkStream = 64 + UInt32(try read(1)[0])
        } else if chunkStream == 1 {
            let two = try read(2)
            chunkStream = 64 + UInt32(two[0]) + UInt32(two[1]) * 256
        }
        // Types 2 and 3 take the length and type from an earlier header; type 1 brings them (a
        // message stream id it lacks is 0, as FFmpeg reads it).
        guard format <= 1 || chunkStreams[chunkStream] != nil else {
            throw .violation(.chunkWithoutHeader(chunkStream: chunkStream))
        }
        // Taken out while the chunk is read, so that the payload has one holder and grows in place.
        var state = chunkStreams.removeValue(forKey: chunkStream) ?? ChunkStreamState()
        let fields = try read([11, 7, 3, 0][Int(format)])
        var timestampValue: UInt32 = 0  // type 0: the time; types 1 and 2: the delta from the previous message
        if format <= 2 {
            timestampValue = BigEndian.value(fields.prefix(3))
            state.hasExtendedTimestamp = timestampValue == extendedTimestampMarker
        }
        if format <= 1 {
            state.length = Int(BigEndian.value(fields[3..<6]))
            state.typeID = fields[6]
        }
        if format == 0 {
            state.streamID = UInt32(fields[7]) | UInt32(fields[8]) << 8 | UInt32(fields[9]) << 16
                | UInt32(fields[10]) << 24
        }
        if state.hasExtendedTimestamp {
            let extended = BigEndian.value(try read(4))  // on a type-3 chunk too, where the value repeats
            if format <= 2 { timestampValue = extended }
        }
        if format == 1 || format == 2 { state.timestampDelta = timestampValue }
        if state.message == nil {  // this chunk begins a message
            guard state.length <= Self.maxMessageBytes else {
                throw .violation(.messageTooLarge(bytes: state.length, limit: Self.maxMessageBytes))
            }
            if format == 0 {
                state.timestamp = timestampValue
                state.timestampDelta = 0  // a message begun by a type-3 chunk after it keeps its time
            } else {
                state.timestamp &+= state.timestampDelta
            }
            state.message = IncomingMessage(typeID: state.typeID, streamID: state.streamID, timestamp: state.timestamp,
                                            length: state.length)
        }
        var message = state.message!
        state.message = nil
        message.payload += try read(min(chunkSize, message.length - message.payload.count))
        let complete = message.payload.count >= message.length
        if !complete { state.message = message }
        chunkStreams[chunkStream] = state
        return complete ? message : nil
    }
}
