import CaptureLink
import Foundation
import Testing
import TestSupport

/// Issue 22 (memory): the pusher maps one ring slot's pages at a time. Reading a frame from another
/// slot drops the previous slot's page-table entries (MADV_DONTNEED), which for the shared memfd
/// must keep the pixels: a slot read again reads the same bytes. And a frame given back with
/// `releaseConsumed` returns its slot at once, so the helper writes the next frame into it again.
@Suite(.timeLimit(.minutes(10))) struct RingResidencyTests {
    static let width = 640, height = 480

    private func makePusher(_ recorder: EventRecorder, runtime: String) throws(Rendezvous.Failure) -> PusherEndpoint {
        var configuration = PusherEndpointConfiguration(group: "residency")
        configuration.runtimeDirectory = runtime
        configuration.maxWidth = UInt32(Self.width)
        configuration.maxHeight = UInt32(Self.height)
        return try PusherEndpoint(configuration: configuration) { recorder.record($0) }
    }

    private func makeHelper(runtime: String) throws -> HelperEndpoint {
        var configuration = HelperEndpointConfiguration(
            group: "residency", helperName: "swift-test", helperVersion: "1", pixelFormats: [.bgrx],
            maxWidth: UInt32(Self.width), maxHeight: UInt32(Self.height))
        configuration.runtimeDirectory = runtime
        configuration.connectRetryMs = 2000
        return try HelperEndpoint(configuration: configuration)
    }

    /// Publishes a frame whose every byte depends on its position and `sequence`; returns its slot.
    private func publish(_ helper: HelperEndpoint, sequence: UInt64) throws -> UInt32 {
        let slot = try #require(try helper.acquireSlot(), "the helper owned no free slot for frame \(sequence)")
        let layout = FrameGeometry.packedLayout(.bgrx, width: UInt32(Self.width), height: UInt32(Self.height))
        let stride = Int(layout.strides[0])
        for y in 0..<Self.height {
            for x in 0..<Self.width * 4 {
                slot.bytes[y * stride + x] = Self.byte(x: x, y: y, sequence: sequence)
            }
        }
        try helper.publish(slot, format: .bgrx, width: UInt32(Self.width), height: UInt32(Self.height),
                           strides: layout.strides, planeOffsets: layout.offsets)
        return slot.index
    }

    static func byte(x: Int, y: Int, sequence: UInt64) -> UInt8 {
        UInt8(truncatingIfNeeded: x &* 7 &+ y &* 13 &+ Int(sequence) &* 101)
    }

    /// Bytes of the frame that differ from its pattern (every byte is read, so every page is mapped).
    private func mismatches(_ frame: BorrowedFrame) -> Int {
        frame.withPlanes { planes in
            var wrong = 0
            let stride = frame.info.strides[0], sequence = frame.info.sequence
            for y in 0..<Self.height {
                for x in 0..<Self.width * 4 {
                    if planes[0][y * stride + x] != Self.byte(x: x, y: y, sequence: sequence) { wrong += 1 }
                }
            }
            return wrong
        }
    }

    /// Resident KiB of the mapping of this process that contains `address` (/proc/self/smaps).
    private func residentKiB(containing address: UInt) throws -> Int {
        // Read to the end of the file: /proc files say they are empty to stat.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? handle.close() }
        let smaps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        var inside = false
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let range = fields.first, range.contains("-"), !range.hasSuffix(":") {
                let bounds = range.split(separator: "-").compactMap { UInt($0, radix: 16) }
                inside = bounds.count == 2 && bounds[0] <= address && address < bounds[1]
            } else if inside, fields.first == "Rss:", fields.count > 1 {
                return try #require(Int(fields[1]))
            }
        }
        Issue.record("no mapping contains \(String(address, radix: 16)) in \(smaps.count) bytes of smaps")
        return -1
    }

    private func waitForFrame(_ recorder: EventRecorder, sequence: UInt64) throws {
        try #require(recorder.wait { $0.frame?.sequence == sequence } != nil, "frame \(sequence) never arrived")
    }

    @Test func thePusherMapsOneSlotAndASlotReadAgainKeepsItsPixels() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        let helper = try makeHelper(runtime: runtime)
        try helper.start(sourceInfo: "{}")
        let slotKiB = Int(helper.welcome.slotBytes) / 1024
        // One slot, plus the header page and the kernel's fault-around (a read fault maps up to 64 KiB
        // of pages already in the memfd around it, which may reach into the neighbouring slot).
        let oneSlotKiB = slotKiB + 128

        // Frame 1, held by the pusher while frame 2 goes into another slot.
        let firstSlot = try publish(helper, sequence: 1)
        try waitForFrame(recorder, sequence: 1)
        let first = try #require(pusher.acquireLatestFrame())
        defer { first.release() }
        #expect(mismatches(first) == 0)
        let base = first.withPlanes { UInt(bitPattern: $0[0].baseAddress!) } - UInt(first.info.planeOffsets[0])
        let ringStart = base - UInt(helper.welcome.slotBytes) * UInt(firstSlot) - 4096
        let secondSlot = try publish(helper, sequence: 2)
        #expect(secondSlot != firstSlot)
        try waitForFrame(recorder, sequence: 2)
        let second = try #require(pusher.acquireLatestFrame())
        #expect(second.info.sequence == 2)
        #expect(mismatches(second) == 0)
        // Reading slot 2 dropped slot 1's pages: the pusher's mapping holds one slot (and the header).
        let afterSecond = try residentKiB(containing: ringStart)
        #expect(afterSecond <= oneSlotKiB, "the pusher's ring mapping holds \(afterSecond) KiB, one slot is \(slotKiB)")
        // Frame 1 read again after its pages were dropped: the same pixels, faulted back in from the memfd.
        #expect(mismatches(first) == 0)
        #expect(try residentKiB(containing: ringStart) <= oneSlotKiB)
        second.releaseConsumed()
        first.release()

        // A consumed frame's slot comes back at once: the next frames all go into that one slot.
        var slotsUsed: Set<UInt32> = []
        for sequence in UInt64(3)...8 {
            let deadline = Date().addingTimeInterval(5)
            var slot: UInt32?
            while slot == nil && Date() < deadline {
                _ = try helper.poll(timeoutMs: 10)
                if helper.ownedSlotCount == 3 { slot = try publish(helper, sequence: sequence) }
            }
            let published = try #require(slot, "frame \(sequence - 1)'s slot did not come back within 5 s")
            slotsUsed.insert(published)
            try waitForFrame(recorder, sequence: sequence)
            let frame = try #require(pusher.acquireLatestFrame())
            #expect(frame.info.sequence == sequence)
            #expect(mismatches(frame) == 0)
            frame.releaseConsumed()
            #expect(pusher.acquireLatestFrame() == nil, "a consumed frame is still offered as the latest")
        }
        #expect(slotsUsed.count == 1, "frames went into slots \(slotsUsed.sorted())")
        #expect(try residentKiB(containing: ringStart) <= oneSlotKiB)
        helper.finish(.user, text: "done")
        #expect(recorder.wait { $0.finished != nil } != nil)
        #expect(recorder.all.allSatisfy { $0.violation == nil })
    }
}
