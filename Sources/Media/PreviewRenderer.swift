import CYUV

/// Turns the outgoing I420 picture into the preview window's B G R X pixels: libyuv's
/// I420ToARGB (BT.601 limited range, as the stream is tagged), optionally mirrored (ARGBMirror),
/// then ARGBScale (bilinear) into the window as `scaleMode` says: fit (black bars), fill
/// (stretched) or crop (cut to the window's shape). Buffers are reused. Not thread-safe.
public final class PreviewRenderer {
    private var argb: [UInt8] = []
    private var mirroredARGB: [UInt8] = []

    public init() {}

    /// Draws `frame` into `pixels` (`width` x `height`, `strideBytes` a row).
    public func render(_ frame: VideoFrame, into pixels: UnsafeMutableRawPointer, width: Int, height: Int,
                       strideBytes: Int, scaleMode: ScaleMode, mirrored: Bool)
    {
        let sourceBytes = frame.width * frame.height * 4
        if argb.count != sourceBytes { argb = [UInt8](repeating: 0, count: sourceBytes) }
        if mirrored && mirroredARGB.count != sourceBytes { mirroredARGB = [UInt8](repeating: 0, count: sourceBytes) }
        let y = frame.plane(0), u = frame.plane(1), v = frame.plane(2)
        let sourceStride = Int32(frame.width * 4)
        argb.withUnsafeMutableBufferPointer { buffer in
            _ = I420ToARGB(y.data, y.stride, u.data, u.stride, v.data, v.stride, buffer.baseAddress, sourceStride,
                           Int32(frame.width), Int32(frame.height))
        }
        if mirrored {
            argb.withUnsafeBufferPointer { source in
                mirroredARGB.withUnsafeMutableBufferPointer { target in
                    _ = ARGBMirror(source.baseAddress, sourceStride, target.baseAddress, sourceStride, Int32(frame.width),
                                   Int32(frame.height))
                }
            }
        }
        let layout = FrameConverter.layout(sourceWidth: frame.width, sourceHeight: frame.height, outputWidth: width,
                                           outputHeight: height, mode: scaleMode)
        let target = pixels.assumingMemoryBound(to: UInt8.self)
        if scaleMode == .fit {
            // Black bars (B G R X 0 0 0 255).
            _ = ARGBRect(target, Int32(strideBytes), 0, 0, Int32(width), Int32(height), 0xFF00_0000)
        }
        let source = layout.source, destination = layout.destination
        (mirrored ? mirroredARGB : argb).withUnsafeBufferPointer { buffer in
            let start = buffer.baseAddress! + source.y * frame.width * 4 + source.x * 4
            _ = ARGBScale(start, sourceStride, Int32(source.width), Int32(source.height),
                          target + destination.y * strideBytes + destination.x * 4, Int32(strideBytes),
                          Int32(destination.width), Int32(destination.height), kFilterBilinear)
        }
    }
}
