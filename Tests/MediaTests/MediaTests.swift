import Media
import Testing

@Suite(.timeLimit(.minutes(10))) struct CodecLibraryTests {
    @Test func libx264AndAacEncodersAreInLibavcodec() {
        #expect(CodecLibrary.hasEncoder(named: H264EncoderName.libx264.rawValue))
        #expect(CodecLibrary.encoderDescription(named: "libx264")?.contains("H.264") == true)
        #expect(CodecLibrary.hasEncoder(named: "aac"))
    }

    @Test func unknownEncoderIsNotFound() {
        #expect(!CodecLibrary.hasEncoder(named: "no-such-encoder"))
        #expect(CodecLibrary.encoderDescription(named: "no-such-encoder") == nil)
    }

    @Test func ffmpegLibrariesAreTheDebian12Generation() {
        let versions = Dictionary(uniqueKeysWithValues: CodecLibrary.versions.map { ($0.library, $0.version) })
        #expect(versions.keys.sorted() == ["avcodec", "avformat", "avutil", "swresample", "swscale"])
        // FFmpeg 5.1 is avcodec 59; anything older lacks the APIs the pipeline uses.
        let avcodecMajor = Int(versions["avcodec"]!.split(separator: ".")[0])!
        #expect(avcodecMajor >= 59)
    }
}

@Suite(.timeLimit(.minutes(10))) struct PixelConverterTests {
    /// BT.601 limited range, as libyuv's ARGBToI420 computes it in fixed point: the formula's
    /// 240 for the V of pure red and the U of pure blue comes out as 239.
    @Test(arguments: [
        // (B, G, R) -> (Y, U, V)
        ([0, 0, 0], [16, 128, 128]),
        ([255, 255, 255], [235, 128, 128]),
        ([0, 0, 255], [82, 90, 239]),
        ([0, 255, 0], [144, 54, 34]),
        ([255, 0, 0], [41, 239, 110]),
    ])
    func solidColourConvertsToItsBT601Value(bgr: [Int], yuv: [Int]) throws {
        let width = 8, height = 4, stride = width * 4 + 16
        var pixels = [UInt8](repeating: 0, count: stride * height)
        for row in 0..<height {
            for column in 0..<width {
                let offset = row * stride + column * 4
                pixels[offset] = UInt8(bgr[0])
                pixels[offset + 1] = UInt8(bgr[1])
                pixels[offset + 2] = UInt8(bgr[2])
                pixels[offset + 3] = 0xFF
            }
        }
        let frame = try VideoFrame(width: width, height: height)
        try pixels.withUnsafeBytes {
            try FrameConverter().convertBGRx($0, width: width, height: height, strideBytes: stride, into: frame)
        }
        let values = Set((0..<height).flatMap { y in (0..<width).map { x in frame.yuv(x: x, y: y) } }.map {
            [Int($0.y), Int($0.u), Int($0.v)]
        })
        #expect(values == [yuv])
    }

    @Test func sourceSmallerThanItsGeometryIsRefused() throws {
        let frame = try VideoFrame(width: 4, height: 4)
        let pixels = [UInt8](repeating: 0, count: 4 * 4 * 4 - 1)
        #expect(throws: PixelConversionError.bufferTooSmall(neededBytes: 64, haveBytes: 63)) {
            try pixels.withUnsafeBytes {
                try FrameConverter().convertBGRx($0, width: 4, height: 4, strideBytes: 16, into: frame)
            }
        }
    }

    @Test func strideBelowTheRowIsRefused() throws {
        let frame = try VideoFrame(width: 4, height: 4)
        let pixels = [UInt8](repeating: 0, count: 64)
        #expect(throws: PixelConversionError.strideTooSmall(strideBytes: 12, minimumBytes: 16)) {
            try pixels.withUnsafeBytes {
                try FrameConverter().convertBGRx($0, width: 4, height: 4, strideBytes: 12, into: frame)
            }
        }
    }
}
