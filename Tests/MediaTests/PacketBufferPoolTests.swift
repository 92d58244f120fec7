import Media
import Testing

/// Encoded packets' pooled buffers: a buffer comes back once nobody holds it, in the order they
/// were freed; held buffers are never handed out again; past its limit the pool makes buffers outside
/// it (counted) rather than lose a packet.
@Suite(.timeLimit(.minutes(10))) struct PacketBufferPoolTests {
    private func take(_ pool: PacketBufferPool, _ bytes: [UInt8]) -> PacketBuffer {
        bytes.withUnsafeBytes { pool.take(copying: $0) }
    }

    @Test func aBufferNobodyHoldsIsReusedWithTheNewBytes() {
        let pool = PacketBufferPool(maxBuffers: 4, initialCapacity: 64)
        var first: PacketBuffer? = take(pool, [1, 2, 3])
        let firstID = ObjectIdentifier(first!)
        #expect(first!.bytes == [1, 2, 3])
        first = nil
        let second = take(pool, [9, 8])
        #expect(ObjectIdentifier(second) == firstID)
        #expect(second.bytes == [9, 8])
        #expect(second.count == 2)
        #expect(pool.bufferCount == 1)
    }

    @Test func aHeldBufferIsNeverHandedOutAgain() {
        let pool = PacketBufferPool(maxBuffers: 4, initialCapacity: 64)
        let held = take(pool, [1])
        let other = take(pool, [2])
        #expect(held !== other)
        #expect(held.bytes == [1])
        #expect(other.bytes == [2])
        #expect(pool.bufferCount == 2)
    }

    @Test func buffersComeBackInTheOrderTheyWereFreed() {
        let pool = PacketBufferPool(maxBuffers: 8, initialCapacity: 64)
        var held: [PacketBuffer] = (0..<4).map { take(pool, [UInt8($0)]) }
        let ids = held.map(ObjectIdentifier.init)
        held.removeAll()
        let again = (0..<4).map { take(pool, [UInt8(10 + $0)]) }
        #expect(again.map(ObjectIdentifier.init) == ids)
        #expect(pool.bufferCount == 4)
    }

    @Test func pastTheLimitItMakesBuffersOutsideThePoolAndCountsThem() {
        let pool = PacketBufferPool(maxBuffers: 2, initialCapacity: 64)
        let held = (0..<5).map { take(pool, [UInt8($0)]) }
        #expect(held.map(\.bytes) == [[0], [1], [2], [3], [4]])
        #expect(pool.bufferCount == 2)
        #expect(pool.overflowCount == 3)
    }

    @Test func aBufferGrowsForALargerPacketAndKeepsItsSize() {
        let pool = PacketBufferPool(maxBuffers: 2, initialCapacity: 64)
        var buffer: PacketBuffer? = take(pool, [UInt8](repeating: 7, count: 1000))
        #expect(buffer!.capacity >= 1000)
        let grown = buffer!.capacity
        buffer = nil
        let small = take(pool, [1, 2])
        #expect(small.capacity == grown)
        #expect(small.bytes == [1, 2])
    }

    @Test func packetsFromTheEncoderReadTheSameInPlaceAndAsACopy() throws {
        let packet = EncodedVideoPacket(data: [0, 0, 0, 1, 0x65, 0xAA], pts: 3, dts: 3, isKeyframe: true)
        #expect(packet.payload.count == 6)
        #expect(packet.payload.withUnsafeBytes { Array($0) } == packet.data)
        #expect(packet == EncodedVideoPacket(data: [0, 0, 0, 1, 0x65, 0xAA], pts: 3, dts: 3, isKeyframe: true))
        #expect(packet != EncodedVideoPacket(data: [0, 0, 0, 1, 0x65, 0xAB], pts: 3, dts: 3, isKeyframe: true))
    }
}
