/// FLV (Adobe Flash Video File Format, version 10.1), the container of RTMP streams and of
/// `.flv` recordings: a 9-byte header, then tags, each followed by its size.
public enum FLV {
    public enum TagType: UInt8, Sendable {
        case audio = 8
        case video = 9
        case scriptData = 18
    }

    /// The file header and the first PreviousTagSize (0).
    public static func fileHeader(hasAudio: Bool, hasVideo: Bool) -> [UInt8] {
        let flags: UInt8 = (hasAudio ? 0x04 : 0) | (hasVideo ? 0x01 : 0)
        return [0x46, 0x4C, 0x56, 0x01, flags, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00]
    }

    /// One whole tag: the 11-byte header, `body`, and the PreviousTagSize that follows it.
    /// Timestamps are milliseconds, split into 24 low bits and 8 extended bits.
    public static func tag(_ type: TagType, timestampMs: UInt32, body: [UInt8]) -> [UInt8] {
        var tag: [UInt8] = []
        tag.reserveCapacity(15 + body.count)
        tag.append(type.rawValue)
        BigEndian.appendUInt24(UInt32(body.count), to: &tag)
        BigEndian.appendUInt24(timestampMs & 0xFF_FFFF, to: &tag)
        tag.append(UInt8(timestampMs >> 24))
        BigEndian.appendUInt24(0, to: &tag)  // stream id
        tag += body
        BigEndian.append(UInt32(11 + body.count), to: &tag)
        return tag
    }

    // MARK: Video (AVC)

    /// The body of the AVC sequence header tag: keyframe, codec 7, AVCPacketType 0, composition 0.
    public static func avcSequenceHeaderBody(decoderConfigurationRecord record: [UInt8]) -> [UInt8] {
        [0x17, 0x00, 0x00, 0x00, 0x00] + record
    }

    /// The body of an AVC video tag: frame type, AVCPacketType 1 (NAL units) and the composition
    /// time (pts − dts, signed 24 bits), then the length-prefixed NAL units.
    public static func avcVideoBody(lengthPrefixedNALUnits units: [UInt8], isKeyframe: Bool, compositionTimeMs: Int32)
        -> [UInt8]
    {
        var body: [UInt8] = [isKeyframe ? 0x17 : 0x27, 0x01]
        BigEndian.appendUInt24(UInt32(bitPattern: compositionTimeMs) & 0xFF_FFFF, to: &body)
        body += units
        return body
    }

    /// `avcVideoBody` from an Annex-B access unit read in place, appended to `body` (which the caller
    /// empties and reuses: no allocation per frame once it has grown to the largest frame).
    public static func appendAVCVideoBody(annexB unit: UnsafeRawBufferPointer, isKeyframe: Bool,
                                          compositionTimeMs: Int32, to body: inout [UInt8]) {
        body.append(isKeyframe ? 0x17 : 0x27)
        body.append(0x01)
        BigEndian.appendUInt24(UInt32(bitPattern: compositionTimeMs) & 0xFF_FFFF, to: &body)
        AVC.appendLengthPrefixed(annexB: unit, to: &body)
    }

    /// The body of the AVC end-of-sequence tag.
    public static let avcEndOfSequenceBody: [UInt8] = [0x17, 0x02, 0x00, 0x00, 0x00]

    // MARK: Audio (AAC)

    /// The first byte of every AAC audio tag: format 10 (AAC), 44 kHz, 16-bit, stereo (as the
    /// specification requires for AAC, whatever the real rate and channels).
    static let aacSoundFlags: UInt8 = 0xAF

    /// The body of the AAC sequence header: AACPacketType 0 and the AudioSpecificConfig.
    public static func aacSequenceHeaderBody(audioSpecificConfig: [UInt8]) -> [UInt8] {
        [aacSoundFlags, 0x00] + audioSpecificConfig
    }

    /// The body of a raw AAC frame tag: AACPacketType 1 and the frame.
    public static func aacFrameBody(_ frame: [UInt8]) -> [UInt8] {
        [aacSoundFlags, 0x01] + frame
    }

    /// `aacFrameBody` from a frame read in place, appended to `body` (emptied and reused by the caller).
    public static func appendAACFrameBody(_ frame: UnsafeRawBufferPointer, to body: inout [UInt8]) {
        body.append(aacSoundFlags)
        body.append(0x01)
        body.append(contentsOf: frame)
    }

    /// The AudioSpecificConfig of AAC-LC (object type 2) at a standard rate, or nil for a rate
    /// without a sampling-frequency index.
    public static func aacLCAudioSpecificConfig(sampleRateHz: Int, channels: Int) -> [UInt8]? {
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        guard let index = rates.firstIndex(of: sampleRateHz), (1...7).contains(channels) else { return nil }
        let objectType = 2
        return [UInt8((objectType << 3) | (index >> 1)), UInt8(((index & 1) << 7) | (channels << 3))]
    }

    // MARK: Script data

    /// The body of the onMetaData script tag: the string "onMetaData" and an ECMA array.
    public static func metadataBody(_ fields: [(String, AMF0Value)]) -> [UInt8] {
        AMF0.encode([.string("onMetaData"), .ecmaArray(fields)])
    }
}
