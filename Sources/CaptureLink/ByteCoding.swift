/// Little-endian writing and bounds-checked reading of protocol payloads.

struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    /// Writes into `buffer`'s memory (emptied, its capacity kept); `finish` gives it back.
    init(reusing buffer: inout [UInt8]) {
        swap(&bytes, &buffer)
        bytes.removeAll(keepingCapacity: true)
    }

    /// Hands the bytes back to the buffer `init(reusing:)` took.
    mutating func finish(into buffer: inout [UInt8]) { swap(&bytes, &buffer) }

    /// Overwrites 4 bytes at `offset` (a length known only once the rest is written).
    mutating func patchU32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { for index in 0..<4 { bytes[offset + index] = $0[index] } }
    }

    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func raw(_ data: [UInt8]) { bytes.append(contentsOf: data) }

    /// A fixed-size, NUL-padded UTF-8 field (a text of exactly `size` bytes has no NUL: the
    /// field ends at the first NUL or at its end); longer text is cut at a character boundary.
    mutating func paddedText(_ text: String, size: Int) {
        var utf8 = Array(text.utf8)
        while utf8.count > size {
            utf8.removeLast()
            while let last = utf8.last, last & 0xC0 == 0x80 { utf8.removeLast() }
            if let last = utf8.last, last >= 0xC0 { utf8.removeLast() }
        }
        bytes.append(contentsOf: utf8)
        bytes.append(contentsOf: repeatElement(0, count: size - utf8.count))
    }
}

/// Reads fields in order from a payload whose length was already checked.
struct ByteReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func u16() -> UInt16 { read(UInt16.self) }
    mutating func u32() -> UInt32 { read(UInt32.self) }
    mutating func u64() -> UInt64 { read(UInt64.self) }

    mutating func raw(_ count: Int) -> [UInt8] {
        precondition(count <= remaining, "ByteReader: length checked by the caller")
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    private mutating func read<T: FixedWidthInteger>(_: T.Type) -> T {
        let size = MemoryLayout<T>.size
        precondition(size <= remaining, "ByteReader: length checked by the caller")
        defer { offset += size }
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

/// Text fields: UTF-8, bounded.
enum TextField {
    static func decode(_ bytes: [UInt8], field: String, maxBytes: Int) throws(ProtocolViolation) -> String {
        guard bytes.count <= maxBytes else {
            throw ProtocolViolation(.text, "\(field) is \(bytes.count) bytes, at most \(maxBytes) allowed")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ProtocolViolation(.text, "\(field) is not valid UTF-8")
        }
        return text
    }

    /// Counted text: UTF-8, bounded, with no NUL byte.
    static func decodeCounted(_ bytes: [UInt8], field: String, maxBytes: Int) throws(ProtocolViolation) -> String {
        if let nul = bytes.firstIndex(of: 0) { throw ProtocolViolation(.text, "\(field) holds a NUL byte at \(nul)") }
        return try decode(bytes, field: field, maxBytes: maxBytes)
    }

    /// A NUL-padded fixed field: the bytes before the first NUL.
    static func decodePadded(_ bytes: [UInt8], field: String) throws(ProtocolViolation) -> String {
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        return try decode(Array(bytes[..<end]), field: field, maxBytes: bytes.count)
    }
}
