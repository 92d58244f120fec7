import CYUV

/// A planar YUV 4:2:0 picture (Y, then U and V at half width and height) that owns its
/// memory. Made once and reused for every frame, so conversion allocates nothing.
public final class I420Image {
    public let width: Int
    public let height: Int
    public var chromaWidth: Int { (width + 1) / 2 }
    public var chromaHeight: Int { (height + 1) / 2 }

    public private(set) var y: [UInt8]
    public private(set) var u: [UInt8]
    public private(set) var v: [UInt8]

    /// A black picture (limited range: Y 16, U and V 128).
    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "I420Image needs a positive size, got \(width)x\(height)")
        self.width = width
        self.height = height
        y = Array(repeating: 16, count: width * height)
        u = Array(repeating: 128, count: ((width + 1) / 2) * ((height + 1) / 2))
        v = u
    }
}

/// Why a conversion was refused.
public enum PixelConversionError: Error, Equatable, CustomStringConvertible {
    case sizeMismatch(sourceWidth: Int, sourceHeight: Int, destinationWidth: Int, destinationHeight: Int)
    case bufferTooSmall(neededBytes: Int, haveBytes: Int)
    case strideTooSmall(strideBytes: Int, minimumBytes: Int)
    case libyuvFailed(function: String, result: Int32)

    public var description: String {
        switch self {
        case let .sizeMismatch(sw, sh, dw, dh):
            return "source is \(sw)x\(sh) but the destination is \(dw)x\(dh)"
        case let .bufferTooSmall(needed, have):
            return "source buffer holds \(have) bytes, \(needed) needed"
        case let .strideTooSmall(stride, minimum):
            return "stride \(stride) bytes is below the row size \(minimum) bytes"
        case let .libyuvFailed(function, result):
            return "libyuv \(function) failed with \(result)"
        }
    }
}

/// Pixel-format conversion with libyuv's SIMD code.
public enum PixelConverter {
    /// Converts 32-bit BGRx/BGRA pixels (bytes B, G, R, X in memory: X11's 24-bit depth,
    /// libyuv's "ARGB") to I420 with the BT.601 matrix, limited range.
    public static func convertBGRx(
        _ source: UnsafeRawBufferPointer, width: Int, height: Int, strideBytes: Int, into destination: I420Image
    ) throws(PixelConversionError) {
        guard width == destination.width, height == destination.height else {
            throw .sizeMismatch(sourceWidth: width, sourceHeight: height,
                                destinationWidth: destination.width, destinationHeight: destination.height)
        }
        guard strideBytes >= width * 4 else { throw .strideTooSmall(strideBytes: strideBytes, minimumBytes: width * 4) }
        let neededBytes = strideBytes * (height - 1) + width * 4
        guard source.count >= neededBytes, let base = source.baseAddress else {
            throw .bufferTooSmall(neededBytes: neededBytes, haveBytes: source.count)
        }
        let chromaWidth = Int32(destination.chromaWidth)
        let result = destination.withMutablePlanes { y, u, v in
            ARGBToI420(base.assumingMemoryBound(to: UInt8.self), Int32(strideBytes),
                       y, Int32(width), u, chromaWidth, v, chromaWidth, Int32(width), Int32(height))
        }
        guard result == 0 else { throw .libyuvFailed(function: "ARGBToI420", result: result) }
    }
}

extension I420Image {
    fileprivate func withMutablePlanes<R>(
        _ body: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>) -> R
    ) -> R {
        y.withUnsafeMutableBufferPointer { y in
            u.withUnsafeMutableBufferPointer { u in
                v.withUnsafeMutableBufferPointer { v in
                    body(y.baseAddress!, u.baseAddress!, v.baseAddress!)
                }
            }
        }
    }
}
