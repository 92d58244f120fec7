import Foundation

/// The tags of an FLV file as a receiver wrote it (nginx-rtmp's `record`), read without decoding:
/// what arrived, when (the tag's timestamp) and how big. A tag cut off at the end of a file that
/// is still being written is left out.
public struct FLVTag: Sendable, Equatable {
    /// 8 audio, 9 video, 18 script data.
    public let type: UInt8
    public let timestampMs: Int
    /// The tag's payload size in bytes (the FLV header of the tag excluded).
    public let dataBytes: Int
    /// Video: the AVCPacketType (0 sequence header, 1 picture, 2 end of sequence); nil otherwise.
    public let avcPacketType: UInt8?
    /// Video: true for an AVC sequence header (AVCPacketType 0), which carries no picture.
    public var isSequenceHeader: Bool { avcPacketType == 0 }
    /// Video: true for a keyframe (frame type 1).
    public let isKeyframe: Bool
    /// AAC audio: the AACPacketType (0 the AudioSpecificConfig, 1 a raw frame); nil otherwise.
    public var aacPacketType: UInt8? = nil
    /// Where the tag's payload starts in the file (for reading a script tag's AMF0 values).
    public var dataOffset = 0

    /// A video tag with a picture (AVCPacketType 1): not a sequence header, not the end-of-sequence
    /// tag a muxer writes last.
    public var isVideoPicture: Bool { avcPacketType == 1 }
}

public enum FLVTagReader {
    public struct Malformed: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path) is not a readable FLV file: \(reason)" }
    }

    /// Every complete tag of the file at `path`. A missing file, or one without the FLV
    /// signature, is an error (never an empty list, which would read as "nothing arrived").
    public static func tags(_ path: String) throws -> [FLVTag] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Malformed(path: path, reason: "it cannot be read (missing?)")
        }
        return try tags(in: [UInt8](data), path: path)
    }

    static func tags(in bytes: [UInt8], path: String) throws -> [FLVTag] {
        guard bytes.count >= 9, bytes[0] == 0x46, bytes[1] == 0x4C, bytes[2] == 0x56 else {
            throw Malformed(path: path, reason: "no FLV signature in its first \(min(bytes.count, 9)) bytes")
        }
        let headerBytes = Int(bytes[5]) << 24 | Int(bytes[6]) << 16 | Int(bytes[7]) << 8 | Int(bytes[8])
        var offset = headerBytes + 4
        var tags: [FLVTag] = []
        while offset + 11 <= bytes.count {
            let type = bytes[offset] & 0x1F
            let size = Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let timestamp = Int(bytes[offset + 7]) << 24 | Int(bytes[offset + 4]) << 16 | Int(bytes[offset + 5]) << 8
                | Int(bytes[offset + 6])
            let dataStart = offset + 11
            guard dataStart + size <= bytes.count else { break }
            let isVideo = type == 9 && size >= 2
            let isAAC = type == 8 && size >= 2 && bytes[dataStart] >> 4 == 10
            tags.append(FLVTag(type: type, timestampMs: timestamp, dataBytes: size,
                               avcPacketType: isVideo ? bytes[dataStart + 1] : nil,
                               isKeyframe: isVideo && bytes[dataStart] >> 4 == 1,
                               aacPacketType: isAAC ? bytes[dataStart + 1] : nil, dataOffset: dataStart))
            offset = dataStart + size + 4
        }
        return tags
    }

    /// The timestamp of the last video picture in the file, nil when none has arrived yet.
    public static func lastVideoMs(_ path: String) throws -> Int? {
        try tags(path).last(where: \.isVideoPicture)?.timestampMs
    }

    /// Bytes of video pictures per window of `windowMs` of stream time, from the first
    /// picture's window on, in kbps (bits per millisecond): what the receiver got, second by
    /// second when `windowMs` is 1000.
    public static func videoKbpsPerWindow(_ tags: [FLVTag], windowMs: Int = 1000) -> [Int] {
        var bytes: [Int] = []
        for tag in tags where tag.isVideoPicture {
            let window = tag.timestampMs / windowMs
            while bytes.count <= window { bytes.append(0) }
            bytes[window] += tag.dataBytes
        }
        return bytes.map { $0 * 8 / windowMs }
    }
}
