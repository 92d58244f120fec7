import CYUV

/// A picture's three I420 planes, writable: Y is `width` x `height` bytes, U and V are
/// `width / 2` x `height / 2` (4:2:0), each row `stride` bytes apart (strides may exceed the
/// row). Limited range BT.601: Y 16 (black) to 235 (white), U and V 128 neutral. Valid only
/// during the call that hands it out.
public struct I420Planes {
    public let width: Int
    public let height: Int
    public let y: UnsafeMutablePointer<UInt8>
    public let u: UnsafeMutablePointer<UInt8>
    public let v: UnsafeMutablePointer<UInt8>
    public let yStride: Int
    public let uStride: Int
    public let vStride: Int
}

extension VideoFrame {
    /// Hands `body` the picture's planes to read or change in place.
    public func withPlanes<Result>(_ body: (I420Planes) throws -> Result) rethrows -> Result {
        let y = plane(0), u = plane(1), v = plane(2)
        return try body(I420Planes(width: width, height: height, y: y.data, u: u.data, v: v.data,
                                   yStride: Int(y.stride), uStride: Int(u.stride), vStride: Int(v.stride)))
    }

    /// Copies `other` (the same size) into this picture, left and right swapped (libyuv's I420Mirror).
    public func copyMirrored(from other: VideoFrame) {
        precondition(other.width == width && other.height == height, "copyMirrored: sizes differ")
        let sy = other.plane(0), su = other.plane(1), sv = other.plane(2)
        let dy = plane(0), du = plane(1), dv = plane(2)
        _ = I420Mirror(sy.data, sy.stride, su.data, su.stride, sv.data, sv.stride, dy.data, dy.stride, du.data, du.stride,
                       dv.data, dv.stride, Int32(width), Int32(height))
    }
}
