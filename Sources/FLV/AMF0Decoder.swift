/// Why AMF0 bytes could not be read.
public struct AMF0DecodingError: Error, Equatable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    public var description: String { "AMF0 at byte \(offset): \(reason)" }
}

extension AMF0 {
    /// Decodes every value in `bytes`, in order (an RTMP command is a sequence of values).
    public static func decodeAll(_ bytes: [UInt8]) throws(AMF0DecodingError) -> [AMF0Value] {
        var reader = AMF0Reader(bytes: bytes)
        var values: [AMF0Value] = []
        while reader.offset < bytes.count { values.append(try reader.value(depth: 0)) }
        return values
    }
}

private struct AMF0Reader {
    let bytes: [UInt8]
    var offset = 0

    mutating func take(_ count: Int) throws(AMF0DecodingError) -> ArraySlice<UInt8> {
        guard count >= 0, offset + count <= bytes.count else {
            throw AMF0DecodingError(offset: offset, reason: "needs \(count) more bytes, \(bytes.count - offset) left")
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) throws(AMF0DecodingError) -> T {
        let slice = try take(MemoryLayout<T>.size)
        return slice.reduce(T(0)) { ($0 << 8) | T($1) }
    }

    mutating func shortString() throws(AMF0DecodingError) -> String {
        let length = Int(try integer(UInt16.self))
        return String(decoding: try take(length), as: UTF8.self)
    }

    mutating func pairs(depth: Int) throws(AMF0DecodingError) -> [(String, AMF0Value)] {
        var pairs: [(String, AMF0Value)] = []
        while true {
            let key = try shortString()
            if key.isEmpty, offset < bytes.count, bytes[offset] == 0x09 {
                offset += 1
                return pairs
            }
            pairs.append((key, try value(depth: depth + 1)))
        }
    }

    mutating func value(depth: Int) throws(AMF0DecodingError) -> AMF0Value {
        guard depth < 32 else { throw AMF0DecodingError(offset: offset, reason: "nested more than 32 deep") }
        let marker = try take(1).first!
        switch marker {
        case 0x00: return .number(Double(bitPattern: try integer(UInt64.self)))
        case 0x01: return .boolean(try take(1).first! != 0)
        case 0x02: return .string(try shortString())
        case 0x03: return .object(try pairs(depth: depth))
        case 0x05: return .null
        case 0x06: return .undefined
        case 0x08:
            _ = try integer(UInt32.self)  // a count hint; the end marker is what ends the array
            return .ecmaArray(try pairs(depth: depth))
        case 0x0A:
            let count = Int(try integer(UInt32.self))
            guard count <= bytes.count - offset else {
                throw AMF0DecodingError(offset: offset, reason: "strict array of \(count) values in fewer bytes")
            }
            var values: [AMF0Value] = []
            for _ in 0..<count { values.append(try value(depth: depth + 1)) }
            return .strictArray(values)
        case 0x0C:
            let length = Int(try integer(UInt32.self))
            return .string(String(decoding: try take(length), as: UTF8.self))
        default:
            throw AMF0DecodingError(offset: offset - 1, reason: "unsupported marker 0x\(String(marker, radix: 16))")
        }
    }
}

extension AMF0Value {
    /// The value of `key` in an object or ECMA array.
    public subscript(key: String) -> AMF0Value? {
        switch self {
        case .object(let pairs), .ecmaArray(let pairs): return pairs.first { $0.0 == key }?.1
        default: return nil
        }
    }

    public var stringValue: String? { if case .string(let text) = self { return text } else { return nil } }
    public var numberValue: Double? { if case .number(let number) = self { return number } else { return nil } }
}
