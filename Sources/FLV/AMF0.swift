/// AMF0, the value encoding of FLV script data and of RTMP commands (Adobe's "Action Message
/// Format AMF 0" specification). Big-endian; strings up to 65535 bytes.
public enum AMF0Value: Equatable, Sendable {
    case number(Double)
    case boolean(Bool)
    case string(String)
    /// Ordered key-value pairs (marker 0x03).
    case object([(String, AMF0Value)])
    case null
    case undefined
    /// Ordered key-value pairs with a count hint (marker 0x08), as onMetaData uses.
    case ecmaArray([(String, AMF0Value)])
    case strictArray([AMF0Value])

    public static func == (lhs: AMF0Value, rhs: AMF0Value) -> Bool {
        switch (lhs, rhs) {
        case let (.number(a), .number(b)): return a == b || (a.isNaN && b.isNaN)
        case let (.boolean(a), .boolean(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.object(a), .object(b)), let (.ecmaArray(a), .ecmaArray(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.null, .null), (.undefined, .undefined): return true
        case let (.strictArray(a), .strictArray(b)): return a == b
        default: return false
        }
    }
}

public enum AMF0 {
    /// Appends the encoding of `value` to `bytes`.
    public static func encode(_ value: AMF0Value, into bytes: inout [UInt8]) {
        switch value {
        case .number(let number):
            bytes.append(0x00)
            BigEndian.append(number.bitPattern, to: &bytes)
        case .boolean(let flag):
            bytes.append(0x01)
            bytes.append(flag ? 1 : 0)
        case .string(let text):
            bytes.append(0x02)
            appendShortString(text, to: &bytes)
        case .object(let pairs):
            bytes.append(0x03)
            appendPairs(pairs, to: &bytes)
        case .null:
            bytes.append(0x05)
        case .undefined:
            bytes.append(0x06)
        case .ecmaArray(let pairs):
            bytes.append(0x08)
            BigEndian.append(UInt32(pairs.count), to: &bytes)
            appendPairs(pairs, to: &bytes)
        case .strictArray(let values):
            bytes.append(0x0A)
            BigEndian.append(UInt32(values.count), to: &bytes)
            for value in values { encode(value, into: &bytes) }
        }
    }

    public static func encode(_ values: [AMF0Value]) -> [UInt8] {
        var bytes: [UInt8] = []
        for value in values { encode(value, into: &bytes) }
        return bytes
    }

    private static func appendPairs(_ pairs: [(String, AMF0Value)], to bytes: inout [UInt8]) {
        for (key, value) in pairs {
            appendShortString(key, to: &bytes)
            encode(value, into: &bytes)
        }
        bytes += [0x00, 0x00, 0x09]  // empty key, object-end marker
    }

    private static func appendShortString(_ text: String, to bytes: inout [UInt8]) {
        let utf8 = Array(text.utf8.prefix(65535))
        BigEndian.append(UInt16(utf8.count), to: &bytes)
        bytes += utf8
    }
}

/// Big-endian integers in byte arrays: FLV, AMF0 and RTMP are all big-endian.
public enum BigEndian {
    public static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The low 24 bits.
    public static func appendUInt24(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    public static func bytes(_ value: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return bytes
    }

    /// The unsigned value of up to four bytes, most significant first.
    public static func value<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        bytes.reduce(0) { ($0 << 8) | UInt32($1) }
    }
}
