import CLinuxShim
import Glibc
import LinuxSystem
import Synchronization

/// The geometry of a session's ring (SPEC "The ring"): a 4096-byte header, then
/// `slotCount` slots of `slotBytes`, each able to hold one frame of the largest size in
/// any format (4 bytes a pixel at most, rows padded to 64 bytes).
public struct RingGeometry: Equatable, Sendable {
    public let slotCount: UInt32
    public let slotBytes: UInt64
    public let firstSlotOffset: UInt64
    public let ringBytes: UInt64

    /// Slots hold the largest packed frame with rows padded to 64 bytes (SPEC §8.4).
    public init(maxWidth: UInt32, maxHeight: UInt32, slotCount: UInt32) {
        precondition((CaptureLinkProtocol.minSlots...CaptureLinkProtocol.maxSlots).contains(slotCount))
        let paddedRowBytes = (UInt64(maxWidth) * 4 + 63) / 64 * 64
        let frameBytes = paddedRowBytes * UInt64(maxHeight)
        self.slotCount = slotCount
        slotBytes = (frameBytes + 4095) / 4096 * 4096
        firstSlotOffset = UInt64(CaptureLinkProtocol.ringHeaderBytes)
        ringBytes = firstSlotOffset + UInt64(slotCount) * slotBytes
    }

    init(slotCount: UInt32, slotBytes: UInt64, firstSlotOffset: UInt64, ringBytes: UInt64) {
        self.slotCount = slotCount
        self.slotBytes = slotBytes
        self.firstSlotOffset = firstSlotOffset
        self.ringBytes = ringBytes
    }

    public func slotOffset(_ slot: UInt32) -> UInt64 { firstSlotOffset + UInt64(slot) * slotBytes }
}

/// Offsets of the ring header's fields (lpc_ring_header).
enum RingHeaderField {
    static let magic = 0
    static let versionMajor = 4
    static let versionMinor = 6
    static let sessionID = 8
    static let slotCount = 16
    static let headerBytes = 20
    static let slotBytes = 24
    static let firstSlotOffset = 32
    static let ringBytes = 40
    static let helperFramesPublished = 64
    static let helperFramesDropped = 72
    static let pusherFramesConsumed = 128
    static let pusherLastSequence = 136
}

/// A ring memfd mapped into this process. The mapping lives as long as this object, so a
/// frame view that holds it stays valid after its session ended.
final class UnsafeRingMapping: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    let geometry: RingGeometry
    /// The memfd, kept open by the pusher (helpers may close theirs once mapped).
    let descriptor: OwnedDescriptor
    /// The slot whose pages the reader last touched (`readingSlot`), or -1 before the first.
    private let residentSlot = Atomic<Int64>(-1)

    private init(base: UnsafeMutableRawPointer, geometry: RingGeometry, descriptor: OwnedDescriptor) {
        self.base = base
        self.geometry = geometry
        self.descriptor = descriptor
    }

    deinit { munmap(base, Int(geometry.ringBytes)) }

    /// The pusher's ring: a new memfd, sized, its header written, sealed against shrinking
    /// and growing (so a helper can never cause SIGBUS here), and mapped.
    static func create(geometry: RingGeometry, sessionID: UInt64) throws(SystemCallError) -> UnsafeRingMapping {
        let fd = try systemCall("memfd_create") {
            CLinuxShim_memfd_create("livepush-ring", CLinuxShim_MFD_CLOEXEC | CLinuxShim_MFD_ALLOW_SEALING)
        }
        let owned = OwnedDescriptor(fd)
        try systemCall("ftruncate") { ftruncate(fd, off_t(geometry.ringBytes)) }
        let seals = CLinuxShim_F_SEAL_SHRINK | CLinuxShim_F_SEAL_GROW | CLinuxShim_F_SEAL_SEAL
        try systemCall("fcntl(F_ADD_SEALS)") { CLinuxShim_fcntl_int(fd, CLinuxShim_F_ADD_SEALS, seals) }
        // Not populated: the pusher only reads the slots, one at a time (`readingSlot`), so it maps
        // a slot's pages when it first converts a frame from it rather than the whole ring at once.
        let mapping = try map(descriptor: owned, geometry: geometry, populate: false)
        mapping.store(CaptureLinkProtocol.ringMagic, at: RingHeaderField.magic)
        mapping.store(CaptureLinkProtocol.versionMajor, at: RingHeaderField.versionMajor)
        mapping.store(CaptureLinkProtocol.versionMinor, at: RingHeaderField.versionMinor)
        mapping.store(sessionID, at: RingHeaderField.sessionID)
        mapping.store(geometry.slotCount, at: RingHeaderField.slotCount)
        mapping.store(UInt32(CaptureLinkProtocol.ringHeaderBytes), at: RingHeaderField.headerBytes)
        mapping.store(geometry.slotBytes, at: RingHeaderField.slotBytes)
        mapping.store(geometry.firstSlotOffset, at: RingHeaderField.firstSlotOffset)
        mapping.store(geometry.ringBytes, at: RingHeaderField.ringBytes)
        return mapping
    }

    /// Maps a ring received in WELCOME after checking its size against the geometry.
    static func map(descriptor: OwnedDescriptor, geometry: RingGeometry,
                    populate: Bool = true) throws(SystemCallError) -> UnsafeRingMapping {
        var status = stat()
        try systemCall("fstat") { fstat(descriptor.rawValue, &status) }
        guard UInt64(status.st_size) == geometry.ringBytes else { throw SystemCallError("ring size check", errno: EINVAL) }
        // MAP_POPULATE faults every page in now, at session start, rather than during the first
        // frames (a 4K ring is 100 MB: page faults there cost milliseconds of hand-off latency).
        let base = mmap(nil, Int(geometry.ringBytes), PROT_READ | PROT_WRITE,
                        MAP_SHARED | (populate ? MAP_POPULATE : 0), descriptor.rawValue, 0)
        guard let base, base != MAP_FAILED else { throw SystemCallError("mmap", errno: errno) }
        return UnsafeRingMapping(base: base, geometry: geometry, descriptor: descriptor)
    }

    func store<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
    }

    func load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        T(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// Drops this process's page-table entries for the slots (madvise MADV_DONTNEED; the memfd keeps
    /// the pixels): for a helper whose X server writes the frames through its own mapping, so the
    /// pages count against the X server and the pusher, not here too. A page touched later faults in again.
    func releaseSlotPages() {
        let offset = Int(geometry.firstSlotOffset)
        _ = madvise(base + offset, Int(geometry.ringBytes) - offset, MADV_DONTNEED)
    }

    /// Before reading a frame in slot `index` (the pusher): when the frame read before was in another
    /// slot, drops this process's page-table entries for that slot (madvise MADV_DONTNEED; for a
    /// shared memfd mapping the pixels stay in the memfd, a page read again faults back in with
    /// the same bytes). The helper takes the lowest free slot, and the pusher's video pipeline
    /// gives a frame back once converted (`BorrowedFrame.releaseConsumed`), so in steady state
    /// every frame is in the same slot and this does nothing;
    /// the pusher then keeps one slot's pages mapped instead of the whole ring (8 MB instead of
    /// 24 at 1080p), at the cost of faulting a slot in when the helper moves to another.
    func readingSlot(_ index: UInt32) {
        let previous = residentSlot.exchange(Int64(index), ordering: .relaxed)
        guard previous >= 0, previous != Int64(index) else { return }
        let offset = Int(geometry.slotOffset(UInt32(previous)))
        _ = madvise(base + offset, Int(geometry.slotBytes), MADV_DONTNEED)
    }

    /// The bytes of one slot.
    func slot(_ index: UInt32) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: base + Int(geometry.slotOffset(index)), count: Int(geometry.slotBytes))
    }
}
