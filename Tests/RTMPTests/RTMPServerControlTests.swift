import FLV
import Foundation
import RTMP
import Testing

/// Our client against a server of the tests' own (`ScriptedRTMPServer`) that completes the
/// handshake and then sends what nginx-rtmp never does: protocol control messages out of range,
/// malformed chunks, extended timestamps on every chunk. Each out-of-range message is a named
/// protocol violation at once, never a wait for the server to close or a timeout.
@Suite(.timeLimit(.minutes(10))) struct RTMPServerControlTests {
    /// The error of a publisher against `server`, and how long it took.
    private func publishError(_ server: ScriptedRTMPServer) throws -> (error: RTMPError, seconds: Double) {
        let url = try RTMPURL(server.url())
        let start = Date()
        do throws(RTMPError) {
            _ = try RTMPPublisher(url: url, timeoutMs: 5000)
        } catch {
            return (error, Date().timeIntervalSince(start))
        }
        throw ScriptError("the publisher reached publishing")
    }

    /// A server that answers up to connect, sends `bytes` instead of connect's `_result`, and then
    /// waits for the client to give up (true when it closed the connection).
    private func violatingServer(_ send: @escaping @Sendable (ScriptedRTMPConnection) throws -> Void) throws
        -> ScriptedRTMPServer
    {
        try ScriptedRTMPServer { connection in
            try connection.handshake()
            _ = try connection.readCommand("connect")
            try send(connection)
            guard connection.clientCloses(within: 8) else { throw ScriptError("the client kept the connection") }
        }
    }

    @Test func aChunkSizeOfZeroIsAProtocolViolationNotAClosedConnection() throws {
        let server = try violatingServer { try $0.setChunkSize(0) }
        let (error, seconds) = try publishError(server)
        #expect(error.kind == .protocolViolation, "\(error)")
        #expect(error.violation == .chunkSizeOutOfRange(0), "\(error)")
        #expect(error.step == .netConnection)
        #expect(error.description
            == "NetConnection.connect: the server set the chunk size to 0, outside 1...2147483647 (Set Chunk Size)")
        #expect(seconds < 4, "the violation took \(seconds) s to be reported: it waited for a timeout")
        try server.waitForScript()
    }

    @Test(arguments: [UInt32(0x8000_0000), 0xFFFF_FFFF])
    func aChunkSizeWithTheReservedBitIsAProtocolViolation(size: UInt32) throws {
        let server = try violatingServer { try $0.setChunkSize(size) }
        let (error, _) = try publishError(server)
        #expect(error.kind == .protocolViolation, "\(error)")
        #expect(error.violation == .chunkSizeOutOfRange(size), "\(error)")
        #expect(error.detail.contains("chunk size to \(size)"), "\(error)")
        try server.waitForScript()
    }

    @Test func aWindowAcknowledgementSizeOfZeroIsAProtocolViolation() throws {
        let server = try violatingServer { try $0.sendControl(type: 5, value: 0) }
        let (error, _) = try publishError(server)
        #expect(error.kind == .protocolViolation, "\(error)")
        #expect(error.violation == .windowAcknowledgementSizeZero, "\(error)")
        #expect(error.description == "NetConnection.connect: the server set the window acknowledgement size to 0 "
            + "(Window Acknowledgement Size)")
        try server.waitForScript()
    }

    @Test func aSetChunkSizeShorterThanItsFieldIsAProtocolViolation() throws {
        let server = try violatingServer { try $0.send(type: 1, chunkStream: 2, payload: [0x00, 0x10]) }
        let (error, _) = try publishError(server)
        #expect(error.kind == .protocolViolation, "\(error)")
        #expect(error.violation == .controlMessageTooShort(type: 1, bytes: 2), "\(error)")
        try server.waitForScript()
    }

    @Test func aMessageOverOneMebibyteIsAProtocolViolation() throws {
        // A header announcing 1 MiB + 1 bytes; nothing of the payload needs to follow.
        let server = try violatingServer { connection in
            var header: [UInt8] = [0x03, 0, 0, 0]
            BigEndian.appendUInt24(1024 * 1024 + 1, to: &header)
            try connection.write(header + [20, 0, 0, 0, 0])
        }
        let (error, _) = try publishError(server)
        #expect(error.kind == .protocolViolation, "\(error)")
        #expect(error.violation == .messageTooLarge(bytes: 1024 * 1024 + 1, limit: 1024 * 1024), "\(error)")
        try server.waitForScript()
    }

    @Test func aChunkContinuingAChunkStreamWithNoHeaderIsAProtocolViolation() throws {
        // A type-3 chunk on chunk stream 7, which has had no type-0 header.
        let server = try violatingServer { try $0.write([0xC0 | 7, 1, 2, 3]) }
        let (error, _) = try publishError(server)
        #expect(error.kind == .protocolViolation, "\(error)")
        #expect(error.violation == .chunkWithoutHeader(chunkStream: 7), "\(error)")
        try server.waitForScript()
    }

    @Test func aType1HeaderFirstOnAChunkStreamIsAccepted() throws {
        // connect's _result opens chunk stream 3 with a type-1 header: it brings the length and
        // type, and the message stream id it lacks is 0.
        let server = try ScriptedRTMPServer { connection in
            try connection.handshake()
            try connection.answerConnect(format: 1)
            try connection.answerCreateStream()
            try connection.answerPublish()
            _ = try connection.readCommand("FCUnpublish")
        }
        let publisher = try RTMPPublisher(url: try RTMPURL(server.url()))
        #expect(publisher.state == .publishing)
        publisher.finish()
        try server.waitForScript()
    }

    @Test(arguments: [UInt32(1), 0x7FFF_FFFF])
    func theSmallestAndLargestChunkSizesAreAccepted(size: UInt32) throws {
        let server = try ScriptedRTMPServer { connection in
            try connection.handshake()
            try connection.setChunkSize(size)
            try connection.answerConnect()
            try connection.answerCreateStream()
            try connection.answerPublish()
            _ = try connection.readCommand("FCUnpublish")
        }
        let publisher = try RTMPPublisher(url: try RTMPURL(server.url()))
        #expect(publisher.state == .publishing)
        publisher.finish()
        try server.waitForScript()
    }

    @Test func aServerThatClosesDuringConnectIsNamedOnceWithItsStep() throws {
        let server = try ScriptedRTMPServer { connection in
            try connection.handshake()
            _ = try connection.readCommand("connect")
        }
        let (error, _) = try publishError(server)
        #expect(error.description == "NetConnection.connect: the server closed the connection")
        #expect(error.kind == .handshakeFailed)
        try server.waitForScript()
    }

    @Test func aServerThatClosesDuringTheHandshakeNamesThePartOnce() throws {
        let server = try ScriptedRTMPServer { connection in _ = try connection.read(1 + 1536) }
        let (error, _) = try publishError(server)
        #expect(error.description == "handshake: S0+S1: the server closed the connection")
        #expect(error.kind == .networkLost)
        try server.waitForScript()
    }

    // MARK: Extended timestamps

    @Test func extendedTimestampsOnTheServersType3ChunksAreRead() throws {
        // Every answer at a time past 0xFFFFFF, in 32-byte chunks: connect's _result takes a type-0
        // chunk and many type-3 chunks, each carrying the 4-byte extended timestamp again;
        // createStream's _result comes with a type-1 header whose delta is extended too.
        let server = try ScriptedRTMPServer { connection in
            try connection.handshake()
            try connection.setChunkSize(32)
            connection.chunking.timestamp = 0x0100_0000
            try connection.answerConnect()
            connection.chunking.timestamp = 0x0100_0040
            try connection.answerCreateStream(format: 1)
            try connection.answerPublish()
            _ = try connection.readCommand("FCUnpublish")
        }
        let publisher = try RTMPPublisher(url: try RTMPURL(server.url()))
        #expect(publisher.state == .publishing)
        publisher.finish()
        try server.waitForScript()
    }

    @Test(arguments: [UInt32(0xFF_FFFE), 0xFF_FFFF, 0x0100_0000, 0xFFFF_FFFF])
    func ourType3ChunksRepeatTheExtendedTimestamp(timestampMs: UInt32) throws {
        // 10000 bytes in 4096-byte chunks: a type-0 chunk and two type-3 chunks; from 0xFFFFFF up
        // each of the three carries the extended timestamp (the server's reader checks the repeats).
        let body = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let received = Received()
        let server = try ScriptedRTMPServer { connection in
            try connection.leadToPublishing()
            while true {
                let message = try connection.readMessage()
                if message.typeID == 9 {
                    received.set(message)
                    return
                }
            }
        }
        let publisher = try RTMPPublisher(url: try RTMPURL(server.url()))
        try publisher.sendVideo(body, timestampMs: timestampMs)
        try server.waitForScript()
        let message = try #require(received.get())
        #expect(message.timestamp == timestampMs)
        #expect(message.payload == body)
        #expect(message.chunks == 3)
        #expect(message.chunksWithExtendedTimestamp == (timestampMs >= 0xFF_FFFF ? 3 : 0))
    }
}

/// What a server's script saw, handed to the test's thread.
final class Received: @unchecked Sendable {
    private let lock = NSLock()
    private var message: ClientMessage?
    func set(_ value: ClientMessage) { lock.withLock { message = value } }
    func get() -> ClientMessage? { lock.withLock { message } }
}
