import CYUV

/// How a source picture of another shape fills the output frame.
public enum ScaleMode: String, Sendable, CaseIterable {
    /// The whole picture, scaled to fit, with black bars on the sides that are left over.
    case fit
    /// The whole frame, the picture stretched to it (its shape changes).
    case fill
    /// The whole frame, the picture scaled to cover it and its overflow cut off.
    case crop
}

/// BGRx (and BGRA: X11's depth 24/32 order, libyuv's "ARGB") into I420 at the output size,
/// with libyuv's SIMD code: ARGBToI420 (BT.601, limited range) straight into the frame when
/// the sizes match, else into a reused intermediate picture that I420Scale (bilinear) then
/// scales into place. NV12 and I420 sources are BT.709 limited range (Capture Link SPEC §8.1):
/// they are converted to the output's BT.601 through a reused BGRA picture (libswscale with the
/// BT.709 coefficients, `BT709Converter`, then ARGBToI420), so that their colours decode as
/// sent. Not thread-safe; one converter per pipeline.
public final class FrameConverter {
    public let scaleMode: ScaleMode
    private var intermediate: VideoFrame?
    /// BT.709 YUV sources go through this BGRA picture on their way to BT.601 (reused).
    private let bt709 = BT709Converter()
    private var argb: UnsafeMutableRawBufferPointer?
    private var argbStride = 0
    /// The geometry black bars were last painted for, so they are painted once, not per frame.
    private var paintedLayout: (sourceWidth: Int, sourceHeight: Int, outputWidth: Int, outputHeight: Int)?

    public init(scaleMode: ScaleMode = .fit) { self.scaleMode = scaleMode }

    deinit { argb?.deallocate() }

    /// Where the source lands in the output (destination rectangle) and which part of the
    /// source is used (source rectangle), for `mode`. Sizes and offsets are even.
    public static func layout(sourceWidth: Int, sourceHeight: Int, outputWidth: Int, outputHeight: Int,
                              mode: ScaleMode) -> (source: ScreenArea, destination: ScreenArea)
    {
        let whole = ScreenArea(x: 0, y: 0, width: sourceWidth, height: sourceHeight)
        let frame = ScreenArea(x: 0, y: 0, width: outputWidth, height: outputHeight)
        func even(_ value: Int) -> Int { value & ~1 }
        switch mode {
        case .fill:
            return (whole, frame)
        case .fit:
            // Scale by the smaller ratio; centre.
            if sourceWidth * outputHeight >= sourceHeight * outputWidth {
                let height = max(2, even(outputWidth * sourceHeight / sourceWidth))
                return (whole, ScreenArea(x: 0, y: even((outputHeight - height) / 2), width: outputWidth, height: height))
            }
            let width = max(2, even(outputHeight * sourceWidth / sourceHeight))
            return (whole, ScreenArea(x: even((outputWidth - width) / 2), y: 0, width: width, height: outputHeight))
        case .crop:
            // Scale by the larger ratio: cut the source to the output's shape, centred.
            if sourceWidth * outputHeight >= sourceHeight * outputWidth {
                let width = max(2, even(sourceHeight * outputWidth / outputHeight))
                return (ScreenArea(x: even((sourceWidth - width) / 2), y: 0, width: width, height: sourceHeight), frame)
            }
            let height = max(2, even(sourceWidth * outputHeight / outputWidth))
            return (ScreenArea(x: 0, y: even((sourceHeight - height) / 2), width: sourceWidth, height: height), frame)
        }
    }

    /// Converts a BGRx picture into `output`.
    public func convertBGRx(_ source: UnsafeRawBufferPointer, width: Int, height: Int, strideBytes: Int,
                            into output: VideoFrame) throws(PixelConversionError)
    {
        try convert(SourcePicture(format: .bgrx, width: width, height: height, planes: [source],
                                  strides: [strideBytes]), into: output)
    }

    /// Converts a picture in any of the helper formats into `output`: libyuv's ARGBToI420 or
    /// ABGRToI420 (RGB), or BT.709 to ARGB and then ARGBToI420 (NV12, I420), straight into the
    /// frame when the sizes match, else into a reused intermediate picture that I420Scale
    /// (bilinear) scales into place.
    public func convert(_ picture: SourcePicture, into output: VideoFrame) throws(PixelConversionError) {
        try picture.validate()
        let (area, destination) = Self.layout(sourceWidth: picture.width, sourceHeight: picture.height,
                                              outputWidth: output.width, outputHeight: output.height, mode: scaleMode)
        let layoutKey = (picture.width, picture.height, output.width, output.height)
        if destination.width != output.width || destination.height != output.height,
           paintedLayout.map({ $0 != layoutKey }) ?? true
        {
            output.fillBlack()
        }
        paintedLayout = layoutKey
        let y = output.plane(0), u = output.plane(1), v = output.plane(2)
        let target = I420Target(
            y: y.data + destination.y * Int(y.stride) + destination.x, yStride: y.stride,
            u: u.data + destination.y / 2 * Int(u.stride) + destination.x / 2, uStride: u.stride,
            v: v.data + destination.y / 2 * Int(v.stride) + destination.x / 2, vStride: v.stride,
            width: destination.width, height: destination.height)
        if area.width == destination.width && area.height == destination.height {
            try toI420(picture, area: area, into: target)
            return
        }
        // Convert at the source size (even), then scale the planes into place.
        let evenArea = ScreenArea(x: area.x, y: area.y, width: area.width & ~1, height: area.height & ~1)
        if intermediate?.width != evenArea.width || intermediate?.height != evenArea.height {
            do { intermediate = try VideoFrame(width: evenArea.width, height: evenArea.height) } catch {
                throw .libyuvFailed(function: "VideoFrame(\(evenArea.width)x\(evenArea.height))", result: -1)
            }
        }
        let middle = intermediate!
        let my = middle.plane(0), mu = middle.plane(1), mv = middle.plane(2)
        try toI420(picture, area: evenArea, into: I420Target(
            y: my.data, yStride: my.stride, u: mu.data, uStride: mu.stride, v: mv.data, vStride: mv.stride,
            width: evenArea.width, height: evenArea.height))
        try scale((UnsafePointer(my.data), my.stride, UnsafePointer(mu.data), mu.stride, UnsafePointer(mv.data), mv.stride),
                  width: evenArea.width, height: evenArea.height, into: target)
    }

    /// Where converted planes go: pointers at the destination's top-left corner, and its size.
    struct I420Target {
        let y: UnsafeMutablePointer<UInt8>, yStride: Int32
        let u: UnsafeMutablePointer<UInt8>, uStride: Int32
        let v: UnsafeMutablePointer<UInt8>, vStride: Int32
        let width: Int, height: Int
    }

    /// `area` of the source, converted to I420 at the same size.
    private func toI420(_ picture: SourcePicture, area: ScreenArea, into target: I420Target) throws(PixelConversionError) {
        let width = Int32(area.width), height = Int32(area.height)
        let result: Int32
        let function: String
        switch picture.format {
        case .bgrx, .rgbx:
            let stride = picture.strides[0]
            let start = picture.base(0) + area.y * stride + area.x * 4
            if picture.format == .bgrx {
                function = "ARGBToI420"
                result = ARGBToI420(start, Int32(stride), target.y, target.yStride, target.u, target.uStride, target.v,
                                    target.vStride, width, height)
            } else {
                function = "ABGRToI420"
                result = ABGRToI420(start, Int32(stride), target.y, target.yStride, target.u, target.uStride, target.v,
                                    target.vStride, width, height)
            }
        case .nv12, .i420:
            // BT.709 in, BT.601 out: through BGRA.
            let buffer = argbPicture(width: area.width, height: area.height)
            let stride = Int32(argbStride)
            if picture.format == .nv12 {
                let yStride = picture.strides[0], uvStride = picture.strides[1]
                try bt709.convert(nv12: true, first: (picture.base(0) + area.y * yStride + area.x, Int32(yStride)),
                                  second: (picture.base(1) + area.y / 2 * uvStride + area.x, Int32(uvStride)),
                                  third: nil, width: area.width, height: area.height, into: buffer, stride: stride)
            } else {
                let planes = picture.i420Planes(area: area)
                try bt709.convert(nv12: false, first: (planes.0, planes.1), second: (planes.2, planes.3),
                                  third: (planes.4, planes.5), width: area.width, height: area.height, into: buffer,
                                  stride: stride)
            }
            let converted = ARGBToI420(buffer, stride, target.y, target.yStride, target.u, target.uStride, target.v,
                                       target.vStride, width, height)
            if converted != 0 { throw .libyuvFailed(function: "ARGBToI420", result: converted) }
            return
        }
        if result != 0 { throw .libyuvFailed(function: function, result: result) }
    }

    /// The reused ARGB picture, grown when a larger source comes (not per frame).
    private func argbPicture(width: Int, height: Int) -> UnsafeMutablePointer<UInt8> {
        let stride = (width * 4 + 63) & ~63
        if let argb, argb.count >= stride * height, argbStride == stride {
            return argb.baseAddress!.assumingMemoryBound(to: UInt8.self)
        }
        argb?.deallocate()
        // Room past the last row: swscale's vector code may write a little beyond it.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: stride * height + 256, alignment: 64)
        argb = buffer
        argbStride = stride
        return buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
    }

    private func scale(
        _ planes: (UnsafePointer<UInt8>, Int32, UnsafePointer<UInt8>, Int32, UnsafePointer<UInt8>, Int32),
        width: Int, height: Int, into target: I420Target
    ) throws(PixelConversionError) {
        let result = I420Scale(planes.0, planes.1, planes.2, planes.3, planes.4, planes.5, Int32(width), Int32(height),
                               target.y, target.yStride, target.u, target.uStride, target.v, target.vStride,
                               Int32(target.width), Int32(target.height), kFilterBilinear)
        if result != 0 { throw .libyuvFailed(function: "I420Scale", result: result) }
    }
}

/// The pixel formats a capture helper may send (Capture Link's), as the converter reads them.
public enum SourcePixelFormat: Sendable {
    /// 4 bytes a pixel, B G R X in memory (also BGRA: alpha is ignored).
    case bgrx
    /// 4 bytes a pixel, R G B X in memory (also RGBA).
    case rgbx
    /// Y plane, then interleaved U V at half width and height.
    case nv12
    /// Y, U and V planes; U and V at half width and height.
    case i420

    var planeCount: Int {
        switch self {
        case .bgrx, .rgbx: return 1
        case .nv12: return 2
        case .i420: return 3
        }
    }
}

/// A picture to convert: its planes as borrowed memory and their strides.
public struct SourcePicture {
    public let format: SourcePixelFormat
    public let width: Int
    public let height: Int
    public let planes: [UnsafeRawBufferPointer]
    public let strides: [Int]

    public init(format: SourcePixelFormat, width: Int, height: Int, planes: [UnsafeRawBufferPointer], strides: [Int]) {
        self.format = format
        self.width = width
        self.height = height
        self.planes = planes
        self.strides = strides
    }

    func base(_ plane: Int) -> UnsafePointer<UInt8> { planes[plane].baseAddress!.assumingMemoryBound(to: UInt8.self) }

    /// Every plane holds its rows: nothing is read outside the memory given.
    func validate() throws(PixelConversionError) {
        guard width > 0, height > 0 else { throw .invalidSourceSize(width: width, height: height) }
        guard planes.count == format.planeCount, strides.count == format.planeCount,
              planes.allSatisfy({ $0.baseAddress != nil })
        else { throw .bufferTooSmall(neededBytes: format.planeCount, haveBytes: planes.count) }
        let halfWidth = (width + 1) / 2, halfHeight = (height + 1) / 2
        // Each plane's row bytes and rows (a switch, not an array: no allocation per frame).
        func extent(_ plane: Int) -> (rowBytes: Int, rows: Int) {
            switch format {
            case .bgrx, .rgbx: (width * 4, height)
            case .nv12: plane == 0 ? (width, height) : (halfWidth * 2, halfHeight)
            case .i420: plane == 0 ? (width, height) : (halfWidth, halfHeight)
            }
        }
        for index in 0..<format.planeCount {
            let extent = extent(index)
            guard strides[index] >= extent.rowBytes else {
                throw .strideTooSmall(strideBytes: strides[index], minimumBytes: extent.rowBytes)
            }
            let needed = strides[index] * (extent.rows - 1) + extent.rowBytes
            guard planes[index].count >= needed else { throw .bufferTooSmall(neededBytes: needed, haveBytes: planes[index].count) }
        }
    }

    /// The three I420 planes from the top-left corner of `area` (x and y even), with strides.
    func i420Planes(area: ScreenArea)
        -> (UnsafePointer<UInt8>, Int32, UnsafePointer<UInt8>, Int32, UnsafePointer<UInt8>, Int32)
    {
        (base(0) + area.y * strides[0] + area.x, Int32(strides[0]),
         base(1) + area.y / 2 * strides[1] + area.x / 2, Int32(strides[1]),
         base(2) + area.y / 2 * strides[2] + area.x / 2, Int32(strides[2]))
    }
}

/// Why a conversion was refused.
public enum PixelConversionError: Error, Equatable, CustomStringConvertible {
    case invalidSourceSize(width: Int, height: Int)
    case bufferTooSmall(neededBytes: Int, haveBytes: Int)
    case strideTooSmall(strideBytes: Int, minimumBytes: Int)
    case libyuvFailed(function: String, result: Int32)
    /// libswscale (loaded on first use, for the conversions libyuv lacks) could not be loaded.
    case libraryMissing(String)

    public var description: String {
        switch self {
        case let .invalidSourceSize(width, height):
            return "source size \(width)x\(height) must be positive"
        case let .bufferTooSmall(needed, have):
            return "source buffer holds \(have) bytes, \(needed) needed"
        case let .strideTooSmall(stride, minimum):
            return "stride \(stride) bytes is below the row size \(minimum) bytes"
        case let .libyuvFailed(function, result):
            return "libyuv \(function) failed with \(result)"
        case let .libraryMissing(message):
            return message
        }
    }
}

/// A rectangle of a picture, in pixels.
public struct ScreenArea: Equatable, Sendable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}
