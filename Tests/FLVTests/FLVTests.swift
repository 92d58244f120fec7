import FLV
import Foundation
import Media
import Testing
import TestSupport

/// Byte-exact vectors, checked by hand against the FLV 10.1 and AMF0 specifications.
@Suite(.timeLimit(.minutes(10))) struct FLVVectorTests {
    @Test func fileHeaderWithAudioAndVideo() {
        #expect(FLV.fileHeader(hasAudio: true, hasVideo: true)
            == [0x46, 0x4C, 0x56, 0x01, 0x05, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00])
        #expect(FLV.fileHeader(hasAudio: false, hasVideo: true)[4] == 0x01)
    }

    @Test func tagSplitsItsTimestampIntoLow24AndExtended8Bits() {
        #expect(FLV.tag(.video, timestampMs: 0x1234_5678, body: [0xAA]) == [
            0x09, 0x00, 0x00, 0x01,  // type, data size 1
            0x34, 0x56, 0x78, 0x12,  // timestamp low 24 bits, then the extended byte
            0x00, 0x00, 0x00,  // stream id
            0xAA,
            0x00, 0x00, 0x00, 0x0C,  // PreviousTagSize = 11 + 1
        ])
    }

    @Test func amf0ValuesEncodeAsTheSpecificationSays() {
        #expect(AMF0.encode([.number(1)]) == [0x00, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0])
        #expect(AMF0.encode([.string("ab")]) == [0x02, 0x00, 0x02, 0x61, 0x62])
        #expect(AMF0.encode([.boolean(true), .null]) == [0x01, 0x01, 0x05])
        #expect(AMF0.encode([.object([("a", .boolean(true))])]) == [0x03, 0x00, 0x01, 0x61, 0x01, 0x01, 0x00, 0x00, 0x09])
        #expect(AMF0.encode([.ecmaArray([("w", .number(0))])])
            == [0x08, 0, 0, 0, 1, 0x00, 0x01, 0x77, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x09])
    }

    @Test func annexBSplitsOnThreeAndFourByteStartCodes() {
        let stream: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 3, 0, 0, 1, 0x68, 4, 0, 0, 0, 1, 0x65, 9, 9]
        #expect(AVC.nalUnits(annexB: stream).map(Array.init) == [[0x67, 1, 2, 3], [0x68, 4], [0x65, 9, 9]])
    }

    @Test func decoderConfigurationRecordFromSPSAndPPS() {
        let extradata: [UInt8] = [0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1F, 0xAC, 0, 0, 0, 1, 0x68, 0xEE, 0x3C]
        #expect(AVC.decoderConfigurationRecord(annexBExtradata: extradata) == [
            0x01, 0x64, 0x00, 0x1F,  // version, profile High, compatibility, level 3.1
            0xFF, 0xE1,  // 4-byte lengths; one SPS
            0x00, 0x05, 0x67, 0x64, 0x00, 0x1F, 0xAC,
            0x01, 0x00, 0x03, 0x68, 0xEE, 0x3C,  // one PPS
        ])
    }

    @Test func lengthPrefixedUnitsDropAccessUnitDelimiters() {
        let access: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x65, 0x88, 0x84]
        #expect(AVC.lengthPrefixed(annexB: access) == [0, 0, 0, 3, 0x65, 0x88, 0x84])
    }

    @Test func bodiesAppendedInPlaceEqualTheArrayFormsAndReuseTheBuffer() {
        // An AUD, an SPS ending in a four-byte start code's zero, and a slice.
        let access: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x65, 0x88, 0x84]
        var body: [UInt8] = []
        access.withUnsafeBytes { FLV.appendAVCVideoBody(annexB: $0, isKeyframe: true, compositionTimeMs: 0, to: &body) }
        #expect(body == FLV.avcVideoBody(lengthPrefixedNALUnits: AVC.lengthPrefixed(annexB: access), isKeyframe: true,
                                         compositionTimeMs: 0))
        #expect(body == [0x17, 0x01, 0, 0, 0, 0, 0, 0, 2, 0x67, 0x42, 0, 0, 0, 3, 0x65, 0x88, 0x84])
        let capacity = body.capacity
        body.removeAll(keepingCapacity: true)
        [UInt8]([0x21, 0x22]).withUnsafeBytes { FLV.appendAACFrameBody($0, to: &body) }
        #expect(body == FLV.aacFrameBody([0x21, 0x22]))
        #expect(body.capacity == capacity)
    }

    @Test func videoBodyCarriesFrameTypeAndSignedCompositionTime() {
        #expect(FLV.avcVideoBody(lengthPrefixedNALUnits: [0xAB], isKeyframe: true, compositionTimeMs: 0)
            == [0x17, 0x01, 0x00, 0x00, 0x00, 0xAB])
        #expect(FLV.avcVideoBody(lengthPrefixedNALUnits: [], isKeyframe: false, compositionTimeMs: -1)
            == [0x27, 0x01, 0xFF, 0xFF, 0xFF])
        #expect(FLV.avcSequenceHeaderBody(decoderConfigurationRecord: [0x01]) == [0x17, 0x00, 0x00, 0x00, 0x00, 0x01])
    }

    @Test func aacAudioSpecificConfigForCommonRates() {
        #expect(FLV.aacLCAudioSpecificConfig(sampleRateHz: 48000, channels: 2) == [0x11, 0x90])
        #expect(FLV.aacLCAudioSpecificConfig(sampleRateHz: 44100, channels: 2) == [0x12, 0x10])
        #expect(FLV.aacLCAudioSpecificConfig(sampleRateHz: 44100, channels: 1) == [0x12, 0x08])
        #expect(FLV.aacLCAudioSpecificConfig(sampleRateHz: 45000, channels: 2) == nil)
        #expect(FLV.aacSequenceHeaderBody(audioSpecificConfig: [0x11, 0x90]) == [0xAF, 0x00, 0x11, 0x90])
        #expect(FLV.aacFrameBody([0x21]) == [0xAF, 0x01, 0x21])
    }
}

/// Our FLV, written from real libx264 output, read back by ffprobe and decoded by ffmpeg.
@Suite(.timeLimit(.minutes(10))) struct FLVFileTests {
    @Test func ffprobeReadsOurFLVWithEveryFrame() throws {
        let encoder = try H264Encoder(settings: H264EncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: 400))
        let frame = try VideoFrame(width: 320, height: 240)
        frame.fillBlack()
        let record = try #require(AVC.decoderConfigurationRecord(annexBExtradata: encoder.extradata))
        var file = FLV.fileHeader(hasAudio: false, hasVideo: true)
        file += FLV.tag(.scriptData, timestampMs: 0, body: FLV.metadataBody([
            ("width", .number(320)), ("height", .number(240)), ("framerate", .number(30)), ("videocodecid", .number(7)),
        ]))
        file += FLV.tag(.video, timestampMs: 0, body: FLV.avcSequenceHeaderBody(decoderConfigurationRecord: record))
        var packets: [EncodedVideoPacket] = []
        for index in 0..<45 { packets += try encoder.encode(frame, pts: Int64(index)) }
        packets += try encoder.encode(nil, pts: 0)
        for packet in packets {
            let body = FLV.avcVideoBody(lengthPrefixedNALUnits: AVC.lengthPrefixed(annexB: packet.data),
                                        isKeyframe: packet.isKeyframe,
                                        compositionTimeMs: Int32((packet.pts - packet.dts) * 1000 / 30))
            file += FLV.tag(.video, timestampMs: UInt32(packet.dts * 1000 / 30), body: body)
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("ours")).path + ".flv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(file).write(to: URL(fileURLWithPath: path))

        let stream = try MediaProbe.videoStream(path)
        #expect(stream["codec_name"] == "h264" && stream["width"] == "320" && stream["height"] == "240")
        #expect(stream["nb_read_frames"] == "45")
        let decode = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path] + MediaProbe.nullOutput)
        #expect(decode.exitCode == 0 && decode.standardError.isEmpty, "\(decode)")
    }
}
