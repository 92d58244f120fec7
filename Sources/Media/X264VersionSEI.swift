/// x264 writes its version and every option it runs with ("x264 - core 164 - H.264/MPEG-4 AVC
/// codec - ... options: cabac=1 ref=1 ... rc=cbr bitrate=4500 ...") as an unregistered-user-data SEI
/// in the very first access unit only. A live output joins later (it starts at a keyframe asked for
/// when it connects) and a recording too, so neither would carry it: the encoder keeps that SEI and
/// puts it back into every keyframe that lacks it, before the first slice. About 700 bytes every
/// GOP; it lets a receiver (and our tests) read what the stream was encoded with.
struct X264VersionSEI {
    private(set) var nal: [UInt8]?
    /// The first packet was looked at (x264 puts the SEI there; other encoders write none).
    private var looked = false

    /// Remembers the SEI from the first packet (Annex-B) when it holds one; copies the packet into
    /// a buffer of `pool`, with the SEI put back in when it is a later keyframe without it. Other
    /// packets are copied untouched, without looking (only the first packet and keyframes are parsed,
    /// so the array made to parse them is one per GOP, not one per frame).
    mutating func pass(_ bytes: UnsafeRawBufferPointer, isKeyframe: Bool, pool: PacketBufferPool) -> PacketBuffer {
        guard !looked || (isKeyframe && nal != nil) else { return pool.take(copying: bytes) }
        let data = Array(bytes)
        let units = Self.units(data)
        if let found = units.first(where: { Self.isVersionSEI(data, $0) }) {
            if nal == nil { nal = [0, 0, 0, 1] + data[found.payload] }
            looked = true
            return pool.take(copying: bytes)
        }
        looked = true
        guard isKeyframe, let nal, let slice = units.first(where: { data[$0.payload.lowerBound] & 0x1F == 5 }) else {
            return pool.take(copying: bytes)
        }
        let withSEI = Array(data[..<slice.start]) + nal + data[slice.start...]
        return withSEI.withUnsafeBytes { pool.take(copying: $0) }
    }

    /// A NAL unit of an Annex-B buffer: where its start code begins, and its bytes after it.
    private struct Unit {
        let start: Int
        let payload: Range<Int>
    }

    private static func units(_ data: [UInt8]) -> [Unit] {
        var starts: [(code: Int, payload: Int)] = []
        var index = 0
        while index + 2 < data.count {
            if data[index] == 0 && data[index + 1] == 0 && data[index + 2] == 1 {
                let code = index > 0 && data[index - 1] == 0 ? index - 1 : index
                starts.append((code, index + 3))
                index += 3
            } else {
                index += 1
            }
        }
        return starts.enumerated().compactMap { offset, start in
            let end = offset + 1 < starts.count ? starts[offset + 1].code : data.count
            return start.payload < end ? Unit(start: start.code, payload: start.payload..<end) : nil
        }
    }

    private static let marker = Array("x264 - core".utf8)

    /// A SEI NAL (type 6) whose text holds x264's marker.
    private static func isVersionSEI(_ data: [UInt8], _ unit: Unit) -> Bool {
        guard data[unit.payload.lowerBound] & 0x1F == 6, unit.payload.count > marker.count else { return false }
        let limit = min(unit.payload.upperBound, unit.payload.lowerBound + 64) - marker.count
        guard limit > unit.payload.lowerBound else { return false }
        for index in unit.payload.lowerBound...limit where data[index] == marker[0] {
            if data[index..<index + marker.count].elementsEqual(marker) { return true }
        }
        return false
    }
}
