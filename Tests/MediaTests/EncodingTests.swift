import Foundation
import Media
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(10))) struct FrameConverterTests {
    @Test func fitKeepsTheShapeWithBlackBars() {
        let wide = FrameConverter.layout(sourceWidth: 1920, sourceHeight: 1200, outputWidth: 1280, outputHeight: 720,
                                         mode: .fit)
        #expect(wide.destination == ScreenArea(x: 64, y: 0, width: 1152, height: 720))
        #expect(wide.source == ScreenArea(x: 0, y: 0, width: 1920, height: 1200))
        let same = FrameConverter.layout(sourceWidth: 1920, sourceHeight: 1080, outputWidth: 1280, outputHeight: 720,
                                         mode: .fit)
        #expect(same.destination == ScreenArea(x: 0, y: 0, width: 1280, height: 720))
    }

    @Test func cropCutsTheOverflowAndFillStretches() {
        let crop = FrameConverter.layout(sourceWidth: 1920, sourceHeight: 1200, outputWidth: 1280, outputHeight: 720,
                                         mode: .crop)
        #expect(crop.source == ScreenArea(x: 0, y: 60, width: 1920, height: 1080))
        #expect(crop.destination == ScreenArea(x: 0, y: 0, width: 1280, height: 720))
        let fill = FrameConverter.layout(sourceWidth: 1920, sourceHeight: 1200, outputWidth: 1280, outputHeight: 720,
                                         mode: .fill)
        #expect(fill.source == ScreenArea(x: 0, y: 0, width: 1920, height: 1200))
        #expect(fill.destination == ScreenArea(x: 0, y: 0, width: 1280, height: 720))
    }

    @Test func redPictureFitIntoAWiderFrameHasBlackBars() throws {
        let width = 200, height = 200
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for index in stride(from: 0, to: pixels.count, by: 4) { pixels[index + 2] = 0xFF; pixels[index + 3] = 0xFF }
        let frame = try VideoFrame(width: 320, height: 200)
        try pixels.withUnsafeBytes {
            try FrameConverter(scaleMode: .fit).convertBGRx($0, width: width, height: height, strideBytes: width * 4,
                                                            into: frame)
        }
        #expect(frame.yuv(x: 160, y: 100) == (82, 90, 239))  // red, BT.601 limited
        #expect(frame.yuv(x: 10, y: 100) == (16, 128, 128))  // left bar
        #expect(frame.yuv(x: 310, y: 100) == (16, 128, 128))  // right bar
    }

    /// The same red in each helper format converts to the same I420 (BT.601 limited: 82, 90, 240),
    /// at the same size and scaled down: sRGB red for the RGB formats, BT.709 red (63, 102, 240)
    /// for NV12 and I420 (Capture Link SPEC §8.1).
    @Test(arguments: ["bgrx", "rgbx", "nv12", "i420"], [320, 160])
    func everyHelperFormatConvertsToTheSameRed(format: String, outputWidth: Int) throws {
        let width = 320, height = 240
        var planes: [[UInt8]]
        var strides: [Int]
        let sourceFormat: SourcePixelFormat
        switch format {
        case "bgrx", "rgbx":
            var pixels = [UInt8](repeating: 0xFF, count: width * height * 4)
            for offset in stride(from: 0, to: pixels.count, by: 4) {
                (pixels[offset], pixels[offset + 1], pixels[offset + 2]) = format == "bgrx" ? (0, 0, 255) : (255, 0, 0)
            }
            planes = [pixels]
            strides = [width * 4]
            sourceFormat = format == "bgrx" ? .bgrx : .rgbx
        case "nv12":
            let uv = [UInt8]((0..<(width * height / 2)).map { $0 % 2 == 0 ? 102 : 240 })
            planes = [[UInt8](repeating: 63, count: width * height), uv]
            strides = [width, width]
            sourceFormat = .nv12
        default:
            planes = [[UInt8](repeating: 63, count: width * height), [UInt8](repeating: 102, count: width * height / 4),
                      [UInt8](repeating: 240, count: width * height / 4)]
            strides = [width, width / 2, width / 2]
            sourceFormat = .i420
        }
        let frame = try VideoFrame(width: outputWidth, height: outputWidth * 3 / 4)
        let converter = FrameConverter(scaleMode: .fill)
        try withBuffers(planes) { buffers in
            try converter.convert(SourcePicture(format: sourceFormat, width: width, height: height, planes: buffers,
                                                strides: strides), into: frame)
        }
        let pixel = frame.yuv(x: frame.width / 2, y: frame.height / 2)
        let tolerance = format.hasPrefix("nv12") || format == "i420" ? 2 : 1  // through ARGB: one more rounding
        #expect(abs(Int(pixel.y) - 82) <= tolerance && abs(Int(pixel.u) - 90) <= tolerance
                    && abs(Int(pixel.v) - 240) <= tolerance, "\(format) -> \(pixel)")
    }

    private func withBuffers(_ arrays: [[UInt8]], _ body: ([UnsafeRawBufferPointer]) throws -> Void) throws {
        func nest(_ index: Int, _ collected: [UnsafeRawBufferPointer]) throws {
            if index == arrays.count { return try body(collected) }
            try arrays[index].withUnsafeBytes { try nest(index + 1, collected + [$0]) }
        }
        try nest(0, [])
    }

    @Test func planeSmallerThanItsRowsIsRefused() throws {
        let frame = try VideoFrame(width: 64, height: 64)
        let small = [UInt8](repeating: 0, count: 64 * 64 - 1)
        #expect(throws: PixelConversionError.bufferTooSmall(neededBytes: 64 * 64, haveBytes: 64 * 64 - 1)) {
            try small.withUnsafeBytes { y in
                try small.withUnsafeBytes { uv in
                    try FrameConverter().convert(SourcePicture(format: .nv12, width: 64, height: 64,
                                                               planes: [y, uv], strides: [64, 64]), into: frame)
                }
            }
        }
    }

    @Test func oddSizedFrameIsRefused() {
        #expect(throws: MediaError.invalidSize(width: 321, height: 240, reason: "H.264 4:2:0 needs an even, positive size")) {
            _ = try VideoFrame(width: 321, height: 240)
        }
    }
}

/// H.264 from libx264 into real files, read back by ffprobe and decoded by ffmpeg.
@Suite(.timeLimit(.minutes(10))) struct RecordingTests {
    /// Solid colours, one a second: (B, G, R).
    static let colours: [[UInt8]] = [[0, 0, 255], [0, 255, 0], [255, 0, 0]]

    private func record(to path: String, seconds: Int = 3, fps: Int = 30) throws {
        let encoder = try H264Encoder(settings: H264EncoderSettings(width: 320, height: 240, fps: fps, bitrateKbps: 500))
        let writer = try RecordingWriter(path: path, encoder: encoder)
        let converter = FrameConverter()
        let frame = try VideoFrame(width: 320, height: 240)
        var pixels = [UInt8](repeating: 0xFF, count: 320 * 240 * 4)
        for index in 0..<(seconds * fps) {
            let colour = Self.colours[index / fps % Self.colours.count]
            for offset in stride(from: 0, to: pixels.count, by: 4) {
                pixels[offset] = colour[0]; pixels[offset + 1] = colour[1]; pixels[offset + 2] = colour[2]
            }
            try pixels.withUnsafeBytes {
                try converter.convertBGRx($0, width: 320, height: 240, strideBytes: 1280, into: frame)
            }
            for packet in try encoder.encode(frame, pts: Int64(index)) { try writer.write(packet) }
        }
        for packet in try encoder.encode(nil, pts: 0) { try writer.write(packet) }
        try writer.finish()
    }

    private func probe(_ path: String) throws -> [String: String] { try MediaProbe.videoStream(path) }

    @Test(arguments: RecordingContainer.allCases)
    func recordingPlaysWithEveryFrameAndItsColours(container: RecordingContainer) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("rec"))
            .path + "." + container.rawValue
        defer { try? FileManager.default.removeItem(atPath: path) }
        try record(to: path)
        let stream = try probe(path)
        #expect(stream["codec_name"] == "h264")
        #expect(stream["width"] == "320" && stream["height"] == "240")
        #expect(stream["r_frame_rate"] == "30/1")
        #expect(stream["nb_read_frames"] == "90")
        #expect(stream["color_space"] == "smpte170m" && stream["color_range"] == "tv")
        #expect(stream["has_b_frames"] == "0")
        // The middle frame of each second, decoded to RGB, is that second's colour.
        for (second, colour) in Self.colours.enumerated() {
            let rgb = try MediaProbe.decodedRGB(path, frame: second * 30 + 15)
            #expect(rgb.count == 320 * 240 * 3, "decoded \(rgb.count) bytes")
            guard rgb.count >= 3 * (120 * 320 + 161) else { continue }
            let pixel = Array(rgb[(120 * 320 + 160) * 3..<(120 * 320 + 161) * 3])
            let expected = [colour[2], colour[1], colour[0]].map(Int.init)
            #expect(zip(pixel.map(Int.init), expected).allSatisfy { abs($0 - $1) <= 12 },
                    "second \(second): decoded \(pixel), drew \(expected)")
        }
    }

    @Test func unknownExtensionIsRefusedNamingTheFormats() throws {
        let encoder = try H264Encoder(settings: H264EncoderSettings(width: 64, height: 64, fps: 30, bitrateKbps: 100))
        #expect(throws: MediaError.unsupportedContainer(extension: "avi")) {
            _ = try RecordingWriter(path: "/tmp/livepush-test.avi", encoder: encoder)
        }
        #expect(MediaError.unsupportedContainer(extension: "avi").description
            == "no recording format for '.avi': use .mp4 (fragmented), .mkv or .flv")
    }
}

/// libx264's rate as the encoder sets it: constant, and following `setBitrate` mid-stream.
@Suite(.timeLimit(.minutes(10))) struct BitrateChangeTests {
    /// Bytes the encoder puts out for `seconds` of a still grey 320x240 picture at 30 fps.
    private func encodedBytes(_ encoder: H264Encoder, _ frame: VideoFrame, from first: Int, seconds: Int) throws -> Int {
        var bytes = 0
        for index in first..<(first + seconds * 30) {
            bytes += try encoder.encode(frame, pts: Int64(index)).reduce(0) { $0 + $1.data.count }
        }
        return bytes
    }

    @Test(.timeLimit(.minutes(10)))
    func aStillPictureComesOutAtTheBitrateAndFollowsSetBitrate() throws {
        let encoder = try H264Encoder(settings: H264EncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: 400))
        let frame = try VideoFrame(width: 320, height: 240)
        let pixels = [UInt8](repeating: 0x80, count: 320 * 240 * 4)
        try pixels.withUnsafeBytes {
            try FrameConverter().convertBGRx($0, width: 320, height: 240, strideBytes: 1280, into: frame)
        }
        _ = try encodedBytes(encoder, frame, from: 0, seconds: 1)  // the VBV settles
        let before = try encodedBytes(encoder, frame, from: 30, seconds: 2) * 8 / 2000
        encoder.setBitrate(kbps: 1200)
        _ = try encodedBytes(encoder, frame, from: 90, seconds: 1)
        let after = try encodedBytes(encoder, frame, from: 120, seconds: 2) * 8 / 2000
        #expect((340...460).contains(before), "at 400 kbps the encoder put out \(before) kbps")
        #expect((1080...1320).contains(after), "after setBitrate(1200) the encoder put out \(after) kbps")
    }
}
