import CFFmpeg
import CLazyLibraries

/// NV12 and I420 pictures in BT.709 limited range (Capture Link's YUV, SPEC §8.1) into BGRA with
/// libswscale and the BT.709 coefficients. (libyuv's BT.709 rows were tried first: their 8-bit
/// coefficients clamp blue's 2.112 to 2.0, so pure blue decoded as 240 and green took 11 of blue.)
/// One context per source shape, made when the shape changes; not thread-safe.
final class BT709Converter {
    private var context: OpaquePointer?
    private var shape: (nv12: Bool, width: Int, height: Int)?
    private var sources: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
    private var sourceStrides: [Int32] = [0, 0, 0, 0]
    private var destinations: [UnsafeMutablePointer<UInt8>?] = [nil, nil, nil, nil]
    private var destinationStrides: [Int32] = [0, 0, 0, 0]

    deinit { sws_freeContext(context) }

    /// Converts the planes (Y and UV for NV12, Y, U and V for I420; `third` nil for NV12) of a
    /// width x height picture into `bgra`. No allocation once the shape is known.
    func convert(nv12: Bool, first: (UnsafePointer<UInt8>, Int32), second: (UnsafePointer<UInt8>, Int32),
                 third: (UnsafePointer<UInt8>, Int32)?, width: Int, height: Int,
                 into bgra: UnsafeMutablePointer<UInt8>, stride: Int32) throws(PixelConversionError)
    {
        if shape.map({ $0 != (nv12, width, height) }) ?? true {
            sws_freeContext(context)
            if let message = CLazyLibraries_check(CLazyLibraries_swscale) {
                shape = nil
                throw .libraryMissing(String(cString: message))
            }
            context = sws_getContext(Int32(width), Int32(height), nv12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P,
                                     Int32(width), Int32(height), AV_PIX_FMT_BGRA,
                                     SWS_POINT | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nil, nil, nil)
            guard let context else {
                shape = nil
                throw .libyuvFailed(function: "sws_getContext(BT.709 \(width)x\(height))", result: -1)
            }
            let bt709 = sws_getCoefficients(SWS_CS_ITU709)
            // Source: BT.709, limited range (0); destination RGB: full range (1).
            _ = sws_setColorspaceDetails(context, bt709, 0, bt709, 1, 0, 1 << 16, 1 << 16)
            shape = (nv12, width, height)
        }
        (sources[0], sourceStrides[0]) = (first.0, first.1)
        (sources[1], sourceStrides[1]) = (second.0, second.1)
        (sources[2], sourceStrides[2]) = (third?.0, third?.1 ?? 0)
        destinations[0] = bgra
        destinationStrides[0] = stride
        let rows = sws_scale(context, sources, sourceStrides, 0, Int32(height), destinations, destinationStrides)
        if rows != Int32(height) { throw .libyuvFailed(function: "sws_scale(BT.709 to BGRA)", result: rows) }
    }
}
