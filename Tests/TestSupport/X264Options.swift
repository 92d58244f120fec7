import Foundation

/// The options x264 writes into its first keyframe as an SEI message ("x264 - core 164 - ...
/// options: cabac=1 ref=1 ..."): what the encoder was really set to, read back from the bytes a
/// receiver got. The text has no zero bytes, so no emulation prevention bytes break it up.
public enum X264Options {
    public struct NotFound: Error, CustomStringConvertible {
        public let path: String
        public var description: String { "no x264 options SEI in \(path)" }
    }

    /// The `name=value` pairs of the first x264 SEI in the file.
    public static func read(_ path: String) throws -> [String: String] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let marker = Array("x264 - core".utf8), options = Array("options: ".utf8)
        guard let start = find(marker, in: bytes, from: 0), let list = find(options, in: bytes, from: start) else {
            throw NotFound(path: path)
        }
        var end = list + options.count
        while end < bytes.count, bytes[end] >= 0x20, bytes[end] < 0x7f { end += 1 }
        let text = String(decoding: bytes[(list + options.count)..<end], as: UTF8.self)
        return Dictionary(text.split(separator: " ").compactMap { pair -> (String, String)? in
            let parts = pair.split(separator: "=", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }, uniquingKeysWith: { first, _ in first })
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from: Int) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = from
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0] && Array(bytes[index..<index + needle.count]) == needle { return index }
            index += 1
        }
        return nil
    }
}
