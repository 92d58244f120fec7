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
/// scales into place. Not thread-safe; one converter per pipeline.
public final class FrameConverter {
    public let scaleMode: ScaleMode
    private var intermediate: VideoFrame?
    /// The geometry black bars were last painted for, so they are painted once, not per frame.
    private var paintedLayout: (sourceWidth: Int, sourceHeight: Int, outputWidth: Int, outputHeight: Int)?

    public init(scaleMode: ScaleMode = .fit) { self.scaleMode = scaleMode }

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
        guard width > 0, height > 0 else { throw .sizeMismatch(sourceWidth: width, sourceHeight: height,
                                                               destinationWidth: output.width,
                                                               destinationHeight: output.height) }
        guard strideBytes >= width * 4 else { throw .strideTooSmall(strideBytes: strideBytes, minimumBytes: width * 4) }
        let neededBytes = strideBytes * (height - 1) + width * 4
        guard source.count >= neededBytes, let base = source.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            throw .bufferTooSmall(neededBytes: neededBytes, haveBytes: source.count)
        }
        let (area, destination) = Self.layout(sourceWidth: width, sourceHeight: height, outputWidth: output.width,
                                              outputHeight: output.height, mode: scaleMode)
        let layoutKey = (width, height, output.width, output.height)
        if destination.width != output.width || destination.height != output.height,
           paintedLayout.map({ $0 != layoutKey }) ?? true
        {
            output.fillBlack()
        }
        paintedLayout = layoutKey
        let sourceStart = base + area.y * strideBytes + area.x * 4
        let y = output.plane(0), u = output.plane(1), v = output.plane(2)

        if area.width == destination.width && area.height == destination.height {
            // Same size: one pass, straight into the frame.
            let result = ARGBToI420(
                sourceStart, Int32(strideBytes),
                y.data + destination.y * Int(y.stride) + destination.x, y.stride,
                u.data + destination.y / 2 * Int(u.stride) + destination.x / 2, u.stride,
                v.data + destination.y / 2 * Int(v.stride) + destination.x / 2, v.stride,
                Int32(area.width), Int32(area.height))
            if result != 0 { throw .libyuvFailed(function: "ARGBToI420", result: result) }
            return
        }
        // Convert at the source size (even), then scale the planes into place.
        let evenWidth = area.width & ~1, evenHeight = area.height & ~1
        if intermediate?.width != evenWidth || intermediate?.height != evenHeight {
            do { intermediate = try VideoFrame(width: evenWidth, height: evenHeight) } catch {
                throw .libyuvFailed(function: "VideoFrame(\(evenWidth)x\(evenHeight))", result: -1)
            }
        }
        let middle = intermediate!
        let my = middle.plane(0), mu = middle.plane(1), mv = middle.plane(2)
        var result = ARGBToI420(sourceStart, Int32(strideBytes), my.data, my.stride, mu.data, mu.stride, mv.data,
                                mv.stride, Int32(evenWidth), Int32(evenHeight))
        if result != 0 { throw .libyuvFailed(function: "ARGBToI420", result: result) }
        result = I420Scale(
            my.data, my.stride, mu.data, mu.stride, mv.data, mv.stride, Int32(evenWidth), Int32(evenHeight),
            y.data + destination.y * Int(y.stride) + destination.x, y.stride,
            u.data + destination.y / 2 * Int(u.stride) + destination.x / 2, u.stride,
            v.data + destination.y / 2 * Int(v.stride) + destination.x / 2, v.stride,
            Int32(destination.width), Int32(destination.height), kFilterBilinear)
        if result != 0 { throw .libyuvFailed(function: "I420Scale", result: result) }
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
