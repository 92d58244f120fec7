import Synchronization

/// Hands captured samples from PipeWire's real-time data thread to the capture's thread loop
/// without a lock: one writer (the stream's `process`, on the data loop) and one reader (the
/// thread loop's drain), each buffer copied in whole with the time its first sample was captured.
///
/// Why: the data loop answers the graph's every cycle; a process callback that waited for the
/// thread loop, or ran on it, missed cycles whenever that thread was not scheduled in time (a
/// busy machine), and PipeWire then gave the stream nothing for those cycles: lost samples, heard
/// as holes, and a timeline that had to move (issue 29). Here the data loop only copies; a late
/// thread loop finds the samples waiting. The ring holds `sampleCapacity` values (about 5 s of
/// stereo at 48 kHz) in at most `recordCapacity` buffers; when the reader is further behind than
/// that, the newest buffer is refused and counted (`overflowedFrames`), never blocked on.
final class SampleHandoff: @unchecked Sendable {
    /// One buffer as the data loop saw it.
    struct Record {
        var firstSample = 0  // running index into the sample ring
        var sampleCount = 0  // values (frames x channels)
        var capturedNs: UInt64 = 0
        var rateHz = 0
        var channels = 0
        /// The stream the buffer came from (a new stream starts a new generation).
        var generation = 0
    }

    static let sampleCapacity = 1 << 19
    static let recordCapacity = 512

    private let samples = UnsafeMutablePointer<Float>.allocate(capacity: sampleCapacity)
    private let records = UnsafeMutablePointer<Record>.allocate(capacity: recordCapacity)
    /// Running counts; each is stored by one side only and read by the other.
    private let recordsWritten = Atomic<Int>(0)  // writer
    private let recordsRead = Atomic<Int>(0)  // reader
    private let samplesRead = Atomic<Int>(0)  // reader
    private var samplesWritten = 0  // writer only
    /// Frames refused because the reader was too far behind (writer; read by anyone).
    let overflowedFrames = Atomic<Int>(0)
    /// The reader's copy of a record that wraps around the end of the ring (one buffer's size; it
    /// grows on the reader's thread the first time a record wraps, never on the data loop).
    private var wrapped: [Float] = []

    init() {
        samples.initialize(repeating: 0, count: Self.sampleCapacity)
        records.initialize(repeating: Record(), count: Self.recordCapacity)
    }

    deinit {
        samples.deallocate()
        records.deallocate()
    }

    /// Writer (the data loop): copies `values` in; false, and counted, when there is no room.
    /// No lock, no allocation.
    @discardableResult
    func write(_ values: UnsafeBufferPointer<Float>, capturedNs: UInt64, rateHz: Int, channels: Int,
               generation: Int) -> Bool {
        let written = recordsWritten.load(ordering: .relaxed)
        let free = Self.sampleCapacity - (samplesWritten - samplesRead.load(ordering: .acquiring))
        guard written - recordsRead.load(ordering: .acquiring) < Self.recordCapacity, values.count <= free else {
            overflowedFrames.add(values.count / max(1, channels), ordering: .relaxed)
            return false
        }
        let start = samplesWritten & (Self.sampleCapacity - 1)
        let first = min(values.count, Self.sampleCapacity - start)
        if let base = values.baseAddress {
            (samples + start).update(from: base, count: first)
            if first < values.count { samples.update(from: base + first, count: values.count - first) }
        }
        records[written & (Self.recordCapacity - 1)] = Record(
            firstSample: samplesWritten, sampleCount: values.count, capturedNs: capturedNs, rateHz: rateHz,
            channels: channels, generation: generation)
        samplesWritten += values.count
        recordsWritten.store(written + 1, ordering: .releasing)
        return true
    }

    /// Reader (the thread loop): every waiting buffer, oldest first. `body` must not keep the
    /// pointer: the writer may reuse the memory once it returns.
    func drain(_ body: (Record, UnsafeBufferPointer<Float>) -> Void) {
        var read = recordsRead.load(ordering: .relaxed)
        let written = recordsWritten.load(ordering: .acquiring)
        while read < written {
            let record = records[read & (Self.recordCapacity - 1)]
            let start = record.firstSample & (Self.sampleCapacity - 1)
            if start + record.sampleCount <= Self.sampleCapacity {
                body(record, UnsafeBufferPointer(start: samples + start, count: record.sampleCount))
            } else {
                let first = Self.sampleCapacity - start
                wrapped.removeAll(keepingCapacity: true)
                wrapped.append(contentsOf: UnsafeBufferPointer(start: samples + start, count: first))
                wrapped.append(contentsOf: UnsafeBufferPointer(start: samples, count: record.sampleCount - first))
                wrapped.withUnsafeBufferPointer { body(record, $0) }
            }
            read += 1
            samplesRead.store(record.firstSample + record.sampleCount, ordering: .releasing)
            recordsRead.store(read, ordering: .releasing)
        }
    }
}
