import CFFmpeg
import CYUV

/// A watermark's picture: a PNG (with its alpha) or a JPEG (opaque), decoded once with
/// libavformat and libavcodec into B G R A bytes.
public struct WatermarkImage: Sendable {
    public let width: Int
    public let height: Int
    /// B G R A bytes, `width * 4` a row, alpha not premultiplied (libyuv's "ARGB").
    public let bgra: [UInt8]

    public init(width: Int, height: Int, bgra: [UInt8]) {
        precondition(bgra.count == width * height * 4, "WatermarkImage: \(bgra.count) bytes for \(width)x\(height)")
        self.width = width
        self.height = height
        self.bgra = bgra
    }

    /// Decodes the first picture of the file at `path`.
    public static func load(path: String) throws(MediaError) -> WatermarkImage {
        let decoded = try StillImage.decodePicture(path: path, to: AV_PIX_FMT_BGRA)
        return WatermarkImage(width: decoded.width, height: decoded.height, bgra: decoded.pixels)
    }
}

/// Where a watermark goes on a picture, in pixels: even offsets and sizes (4:2:0 chroma).
public struct WatermarkPlacement: Equatable, Sendable {
    public let x: Int
    public let y: Int
    public let width: Int
    public let height: Int

    /// The rectangle for normalized `x`, `y` (fractions of the picture's size, from its top left)
    /// and `width` (a fraction of the picture's width; the height follows the image's aspect).
    public init(x: Double, y: Double, width: Double, imageWidth: Int, imageHeight: Int,
                pictureWidth: Int, pictureHeight: Int)
    {
        func even(_ value: Double) -> Int { Int((value / 2).rounded()) * 2 }
        let pixelWidth = max(2, even(width * Double(pictureWidth)))
        self.x = even(x * Double(pictureWidth))
        self.y = even(y * Double(pictureHeight))
        self.width = pixelWidth
        self.height = max(2, even(Double(pixelWidth) * Double(imageHeight) / Double(max(1, imageWidth))))
    }
}

/// A watermark made ready for one picture size: scaled once (libyuv's ARGBScale, box filter),
/// converted once to I420 with an alpha plane that carries the opacity; `blend` then mixes it
/// into a picture with libyuv's I420Blend, touching only its own rectangle.
public final class WatermarkOverlay: @unchecked Sendable {
    public let placement: WatermarkPlacement
    /// The picture size this overlay was made for.
    public let pictureWidth: Int
    public let pictureHeight: Int
    /// The part of the rectangle inside the picture (a watermark may hang over the right or bottom edge).
    private let visibleWidth: Int
    private let visibleHeight: Int
    private let luma: [UInt8]
    private let chromaU: [UInt8]
    private let chromaV: [UInt8]
    private let alpha: [UInt8]

    /// `opacity` from 0 (invisible) to 1 (the image's own alpha).
    public init(image: WatermarkImage, placement: WatermarkPlacement, opacity: Double, pictureWidth: Int,
                pictureHeight: Int) throws(PixelConversionError)
    {
        self.placement = placement
        self.pictureWidth = pictureWidth
        self.pictureHeight = pictureHeight
        visibleWidth = max(0, min(placement.width, pictureWidth - placement.x)) & ~1
        visibleHeight = max(0, min(placement.height, pictureHeight - placement.y)) & ~1
        let width = placement.width, height = placement.height
        var scaled = [UInt8](repeating: 0, count: width * height * 4)
        let scaleResult = image.bgra.withUnsafeBufferPointer { source in
            scaled.withUnsafeMutableBufferPointer { target in
                ARGBScale(source.baseAddress, Int32(image.width * 4), Int32(image.width), Int32(image.height),
                          target.baseAddress, Int32(width * 4), Int32(width), Int32(height), kFilterBox)
            }
        }
        if scaleResult != 0 { throw .libyuvFailed(function: "ARGBScale", result: scaleResult) }
        var luma = [UInt8](repeating: 16, count: width * height)
        var chromaU = [UInt8](repeating: 128, count: width * height / 4)
        var chromaV = [UInt8](repeating: 128, count: width * height / 4)
        var alpha = [UInt8](repeating: 0, count: width * height)
        let convertResult = scaled.withUnsafeBufferPointer { source in
            luma.withUnsafeMutableBufferPointer { y in
                chromaU.withUnsafeMutableBufferPointer { u in
                    chromaV.withUnsafeMutableBufferPointer { v in
                        ARGBToI420(source.baseAddress, Int32(width * 4), y.baseAddress, Int32(width), u.baseAddress,
                                   Int32(width / 2), v.baseAddress, Int32(width / 2), Int32(width), Int32(height))
                    }
                }
            }
        }
        if convertResult != 0 { throw .libyuvFailed(function: "ARGBToI420", result: convertResult) }
        let level = Int((max(0, min(1, opacity)) * 256).rounded())
        for index in 0..<(width * height) { alpha[index] = UInt8(min(255, Int(scaled[index * 4 + 3]) * level / 256)) }
        self.luma = luma
        self.chromaU = chromaU
        self.chromaV = chromaV
        self.alpha = alpha
    }

    /// Mixes the watermark into `frame` (which has this overlay's picture size) in place.
    public func blend(into frame: VideoFrame) {
        precondition(frame.width == pictureWidth && frame.height == pictureHeight, "WatermarkOverlay: picture size")
        guard visibleWidth > 0, visibleHeight > 0 else { return }
        let y = frame.plane(0), u = frame.plane(1), v = frame.plane(2)
        let x0 = placement.x, y0 = placement.y, width = placement.width
        let lumaOffset = y0 * Int(y.stride) + x0
        let uOffset = (y0 / 2) * Int(u.stride) + x0 / 2, vOffset = (y0 / 2) * Int(v.stride) + x0 / 2
        luma.withUnsafeBufferPointer { wy in
            chromaU.withUnsafeBufferPointer { wu in
                chromaV.withUnsafeBufferPointer { wv in
                    alpha.withUnsafeBufferPointer { wa in
                        _ = I420Blend(wy.baseAddress, Int32(width), wu.baseAddress, Int32(width / 2), wv.baseAddress,
                                      Int32(width / 2), y.data + lumaOffset, y.stride, u.data + uOffset, u.stride,
                                      v.data + vOffset, v.stride, wa.baseAddress, Int32(width), y.data + lumaOffset,
                                      y.stride, u.data + uOffset, u.stride, v.data + vOffset, v.stride,
                                      Int32(visibleWidth), Int32(visibleHeight))
                    }
                }
            }
        }
    }
}
