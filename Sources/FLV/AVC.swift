/// H.264 bitstream forms: the Annex-B byte stream encoders produce (start codes) and the
/// length-prefixed form with an AVCDecoderConfigurationRecord that FLV and MP4 carry.
public enum AVC {
    /// The NAL units of an Annex-B stream, without their start codes (00 00 01 or 00 00 00 01).
    public static func nalUnits(annexB bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var units: [ArraySlice<UInt8>] = []
        var index = 0, unitStart: Int?
        while index + 2 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                if let start = unitStart { units.append(trimmed(bytes[start..<index])) }
                index += 3
                unitStart = index
            } else {
                index += 1
            }
        }
        if let start = unitStart, start < bytes.count { units.append(bytes[start..<bytes.count]) }
        return units.filter { !$0.isEmpty }
    }

    /// A unit ends before the zero that begins a four-byte start code.
    private static func trimmed(_ unit: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var end = unit.endIndex
        while end > unit.startIndex, unit[end - 1] == 0 { end -= 1 }
        return unit[unit.startIndex..<end]
    }

    /// The NAL unit type (SPS 7, PPS 8, IDR 5, ...).
    public static func type(of unit: ArraySlice<UInt8>) -> UInt8 { (unit.first ?? 0) & 0x1F }

    /// The AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.2.4.1) for one SPS and one PPS,
    /// with 4-byte NAL lengths. Nil when the SPS is too short to carry profile and level.
    public static func decoderConfigurationRecord(sps: ArraySlice<UInt8>, pps: ArraySlice<UInt8>) -> [UInt8]? {
        guard sps.count >= 4, !pps.isEmpty, sps.count <= 0xFFFF, pps.count <= 0xFFFF else { return nil }
        let base = sps.startIndex
        var record: [UInt8] = [0x01, sps[base + 1], sps[base + 2], sps[base + 3], 0xFF, 0xE1]
        BigEndian.append(UInt16(sps.count), to: &record)
        record += sps
        record.append(0x01)
        BigEndian.append(UInt16(pps.count), to: &record)
        record += pps
        return record
    }

    /// The decoder configuration from an encoder's Annex-B extradata (its SPS and PPS).
    public static func decoderConfigurationRecord(annexBExtradata: [UInt8]) -> [UInt8]? {
        let units = nalUnits(annexB: annexBExtradata)
        guard let sps = units.first(where: { type(of: $0) == 7 }), let pps = units.first(where: { type(of: $0) == 8 })
        else { return nil }
        return decoderConfigurationRecord(sps: sps, pps: pps)
    }

    /// An access unit as 4-byte-length-prefixed NAL units. Access unit delimiters are dropped.
    public static func lengthPrefixed(annexB bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 16)
        bytes.withUnsafeBytes { appendLengthPrefixed(annexB: $0, to: &output) }
        return output
    }

    /// `lengthPrefixed(annexB:)` appended to `output`, read in place: no allocation beyond the
    /// output's own growth (the push path reuses one output buffer).
    public static func appendLengthPrefixed(annexB bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        forEachNALUnit(bytes) { start, end in
            guard bytes[start] & 0x1F != 9 else { return }
            BigEndian.append(UInt32(end - start), to: &output)
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
        }
    }

    /// The non-empty NAL units of an Annex-B stream as byte ranges, without their start codes (the
    /// same units as `nalUnits(annexB:)`).
    private static func forEachNALUnit(_ bytes: UnsafeRawBufferPointer, _ body: (Int, Int) -> Void) {
        var index = 0, unitStart: Int?
        while index + 2 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                if let start = unitStart {
                    var end = index
                    while end > start, bytes[end - 1] == 0 { end -= 1 }
                    if end > start { body(start, end) }
                }
                index += 3
                unitStart = index
            } else {
                index += 1
            }
        }
        if let start = unitStart, start < bytes.count { body(start, bytes.count) }
    }
}
