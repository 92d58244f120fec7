import CYUV

/// The push benchmark's two screens drawn straight into I420 frames in memory, for encoding
/// without a screen: the encoder's floor in `livepush-bench push` and the trial encode of
/// `livepush doctor`. They are the pictures tools/testclients/x11-paint.c puts on the X screen
/// (its patterns `timecode 1e2a3a ffcc00 240 6` and `scroll`), converted as the pipeline converts
/// them (libyuv's ARGBToI420), one step of the painter's 60 Hz animation per `step`; the time
/// code row holds the step's bits rather than the clock.
public final class BenchContent {
    public enum Kind: String, CaseIterable, Sendable {
        /// A still background with a 240 px square moving 6 px a step (x11-paint's timecode pattern).
        case square
        /// The whole picture scrolls 2 px a step: gradient, light noise, six moving blocks.
        case scroll
    }

    public let kind: Kind
    public let width: Int
    public let height: Int
    /// scroll: the texture twice, height x 2 rows, so any scroll offset is one contiguous copy.
    private let texture: VideoFrame?
    private let blockColours: [(y: UInt8, u: UInt8, v: UInt8)]
    private let background: (y: UInt8, u: UInt8, v: UInt8)
    private static let scrollColours: [UInt32] = [0xe04040, 0x40e040, 0x4040e0, 0xe0e040, 0x40e0e0, 0xe040e0]

    public init(_ kind: Kind, width: Int, height: Int) throws(MediaError) {
        self.kind = kind
        self.width = width
        self.height = height
        let converter = FrameConverter(scaleMode: .fill)
        func yuv(_ rgb: UInt32) throws(MediaError) -> (y: UInt8, u: UInt8, v: UInt8) {
            let pixels = [UInt32](repeating: rgb, count: 4)  // BGRX in memory: 0xXXRRGGBB little-endian
            let frame = try VideoFrame(width: 2, height: 2)
            do {
                try pixels.withUnsafeBytes { try converter.convertBGRx($0, width: 2, height: 2, strideBytes: 8, into: frame) }
            } catch {
                throw .invalidSize(width: 2, height: 2, reason: "\(error)")
            }
            return frame.yuv(x: 0, y: 0)
        }
        background = try yuv(0x1e2a3a)
        blockColours = kind == .square ? [try yuv(0xffcc00)] : try Self.scrollColours.map { c throws(MediaError) in try yuv(c) }
        guard kind == .scroll else {
            texture = nil
            return
        }
        let tall = try VideoFrame(width: width, height: 2 * height)
        var pixels = [UInt32](repeating: 0, count: width * 2 * height)
        for y in 0..<(2 * height) {
            for x in 0..<width { pixels[y * width + x] = Self.texel(x: x, y: y % height, width: width, height: height) }
        }
        do {
            try pixels.withUnsafeBytes {
                try converter.convertBGRx($0, width: width, height: 2 * height, strideBytes: width * 4, into: tall)
            }
        } catch {
            throw .invalidSize(width: width, height: height, reason: "\(error)")
        }
        texture = tall
    }

    /// The scroll texture's pixel (0xRRGGBB), as x11-paint-scroll.h computes it.
    static func texel(x: Int, y: Int, width: Int, height: Int) -> UInt32 {
        func hash(_ x: UInt32, _ y: UInt32) -> UInt32 {
            var h = x &* 374761393 &+ y &* 668265263
            h = (h ^ (h >> 13)) &* 1274126177
            return h ^ (h >> 16)
        }
        func clamp(_ v: Int) -> UInt32 { UInt32(max(0, min(255, v))) }
        let r = width > 1 ? x * 255 / (width - 1) : 0
        let g = (y < height / 2 ? y : height - 1 - y) * 510 / height
        let n = Int(hash(UInt32(x), UInt32(y)) & 15) - 8
        return clamp(r + n) << 16 | clamp(g + n) << 8 | clamp(128 + n)
    }

    /// Draws step `step` of the animation into `frame` (which has this content's size).
    public func draw(step: Int, into frame: VideoFrame) {
        switch kind {
        case .square:
            fill(frame, x: 0, y: 0, width: width, height: height, background)
            let size = min(240, height), top = (height - size) / 2 & ~1, left = (step * 6) % width & ~1
            let first = min(size, width - left)
            fill(frame, x: left, y: top, width: first, height: size, blockColours[0])
            if first < size { fill(frame, x: 0, y: top, width: size - first, height: size, blockColours[0]) }
        case .scroll:
            guard let texture else { return }
            let offset = (2 * step) % height
            for index in 0..<3 {
                let source = texture.plane(index), destination = frame.plane(index)
                let rows = index == 0 ? offset : offset / 2, rowBytes = index == 0 ? width : width / 2
                CopyPlane(source.data + rows * Int(source.stride), source.stride, destination.data, destination.stride,
                          Int32(rowBytes), Int32(index == 0 ? height : height / 2))
            }
            let spanX = (width - 128) / 2, spanY = (height - 128) / 2
            guard spanX > 0, spanY > 0 else { break }
            for (i, colour) in blockColours.enumerated() {
                fill(frame, x: 2 * ((50 + 150 * i + (3 + i) * step) % spanX),
                     y: 2 * ((100 + 65 * i + (1 + i) * step) % spanY), width: 128, height: 128, colour)
            }
        }
        // The code row: 52 blocks of 32 px at (32, 32), white or black by the step's bits.
        for block in 0..<52 where 32 + block * 32 + 32 <= width && 64 <= height {
            let on = (step >> (block % 20)) & 1 == 1
            fill(frame, x: 32 + block * 32, y: 32, width: 32, height: 32, on ? (235, 128, 128) : (16, 128, 128))
        }
    }

    /// A rectangle of one colour; x, y, width and height even.
    private func fill(_ frame: VideoFrame, x: Int, y: Int, width: Int, height: Int,
                      _ colour: (y: UInt8, u: UInt8, v: UInt8)) {
        let luma = frame.plane(0), cb = frame.plane(1), cr = frame.plane(2)
        SetPlane(luma.data + y * Int(luma.stride) + x, luma.stride, Int32(width), Int32(height), UInt32(colour.y))
        SetPlane(cb.data + y / 2 * Int(cb.stride) + x / 2, cb.stride, Int32(width / 2), Int32(height / 2),
                 UInt32(colour.u))
        SetPlane(cr.data + y / 2 * Int(cr.stride) + x / 2, cr.stride, Int32(width / 2), Int32(height / 2),
                 UInt32(colour.v))
    }
}
