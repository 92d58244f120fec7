import Synchronization

/// The bytes of one encoded packet, in storage a `PacketBufferPool` hands out again once nobody
/// holds the buffer any more: steady state copies each packet into memory it already has instead
/// of a new array. Written only by the pool's owner before it is handed out; read-only after.
public final class PacketBuffer: @unchecked Sendable, Equatable {
    /// The packet's length in bytes.
    public private(set) var count = 0
    /// Bytes the storage holds before it has to grow.
    public private(set) var capacity: Int
    private var storage: UnsafeMutableRawPointer

    init(capacity: Int) {
        self.capacity = max(64, capacity)
        storage = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { storage.deallocate() }

    /// Makes the buffer hold a copy of `bytes`, growing (never shrinking) its storage when it is too small.
    func assign(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count > capacity {
            storage.deallocate()
            // Room for a little more than this packet, so a stream of slightly larger ones grows once.
            capacity = bytes.count + bytes.count / 4
            storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        }
        if let base = bytes.baseAddress, bytes.count > 0 { storage.copyMemory(from: base, byteCount: bytes.count) }
        count = bytes.count
    }

    /// Reads the packet's bytes in place.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: storage, count: count))
    }

    /// Copies the `count` bytes to `destination` (which has room for them).
    public func copyBytes(to destination: UnsafeMutableRawPointer) {
        if count > 0 { destination.copyMemory(from: storage, byteCount: count) }
    }

    /// A copy in a buffer of its own, exactly this size and outside any pool: for a holder that keeps
    /// packets for long (the replay buffer), so the pool's buffers go back to it at once.
    public func copied() -> PacketBuffer {
        let copy = PacketBuffer(capacity: count)
        withUnsafeBytes { copy.assign($0) }
        return copy
    }

    /// A copy of the bytes as an array (tests, one-off uses; the hot paths read in place).
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    public static func == (a: PacketBuffer, b: PacketBuffer) -> Bool {
        a === b || a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }
}

/// Reusable `PacketBuffer`s for one producer thread (an encoder). `take` returns a buffer that
/// nobody else references any more (the queues and sinks that held it have dropped it), filled with
/// the given bytes; only when all are in use does the pool grow, up to `maxBuffers`. Past that, a
/// buffer outside the pool is made (and counted in `overflowCount`), so a consumer that holds on to
/// packets costs allocations, never lost media. Not thread-safe: one caller of `take`, while the
/// buffers it gave out may be held and dropped on any thread.
public final class PacketBufferPool {
    private var buffers: [PacketBuffer] = []
    /// Where the next search for a free buffer starts: buffers are reused in the order they came back.
    private var cursor = 0
    public let maxBuffers: Int
    private let initialCapacity: Int
    /// Buffers made outside the pool because all `maxBuffers` were held.
    public private(set) var overflowCount = 0

    /// `initialCapacity`: the bytes a new buffer starts with (a buffer grows to the largest packet it held).
    public init(maxBuffers: Int = 256, initialCapacity: Int = 16 * 1024) {
        self.maxBuffers = max(1, maxBuffers)
        self.initialCapacity = initialCapacity
        buffers.reserveCapacity(self.maxBuffers)
    }

    /// Buffers the pool holds (free or in use).
    public var bufferCount: Int { buffers.count }

    /// A buffer nobody else holds, holding a copy of `bytes`.
    public func take(copying bytes: UnsafeRawBufferPointer) -> PacketBuffer {
        let count = buffers.count
        for step in 0..<count {
            let index = (cursor + step) % count
            if isKnownUniquelyReferenced(&buffers[index]) {
                // The last holder dropped it on another thread: see all it did before reusing the memory.
                atomicMemoryFence(ordering: .acquiring)
                cursor = (index + 1) % count
                buffers[index].assign(bytes)
                return buffers[index]
            }
        }
        let buffer = PacketBuffer(capacity: max(initialCapacity, bytes.count))
        buffer.assign(bytes)
        if count < maxBuffers {
            buffers.append(buffer)
            cursor = 0
        } else {
            overflowCount += 1
        }
        return buffer
    }
}
