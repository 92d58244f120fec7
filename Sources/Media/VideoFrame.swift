import CFFmpeg
import CYUV

/// A planar I420 picture in an AVFrame, allocated once and written again for every output
/// frame: the pipeline keeps a few of these in a pool, so steady state allocates nothing.
public final class VideoFrame {
    let frame: UnsafeMutablePointer<AVFrame>
    public let width: Int
    public let height: Int

    public init(width: Int, height: Int) throws(MediaError) {
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0 else {
            throw .invalidSize(width: width, height: height, reason: "H.264 4:2:0 needs an even, positive size")
        }
        guard let frame = av_frame_alloc() else { throw .ffmpeg("av_frame_alloc", CFFmpeg_AVERROR(ENOMEM)) }
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        do {
            try ffmpegCall("av_frame_get_buffer") { av_frame_get_buffer(frame, 32) }
        } catch {
            var doomed: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&doomed)
            throw error
        }
        self.frame = frame
        self.width = width
        self.height = height
    }

    deinit {
        var doomed: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&doomed)
    }

    /// Plane `index` (0 Y, 1 U, 2 V): its bytes and stride.
    func plane(_ index: Int) -> (data: UnsafeMutablePointer<UInt8>, stride: Int32) {
        withUnsafeMutablePointer(to: &frame.pointee.data) { data in
            data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { planes in
                withUnsafeMutablePointer(to: &frame.pointee.linesize) { sizes in
                    sizes.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                        (planes[index]!, strides[index])
                    }
                }
            }
        }
    }

    /// Paints the whole frame black (limited range: Y 16, U and V 128).
    public func fillBlack() {
        let y = plane(0), u = plane(1), v = plane(2)
        SetPlane(y.data, y.stride, Int32(width), Int32(height), 16)
        SetPlane(u.data, u.stride, Int32(width / 2), Int32(height / 2), 128)
        SetPlane(v.data, v.stride, Int32(width / 2), Int32(height / 2), 128)
    }

    /// Asks the encoder to make this picture a keyframe (for an output that starts now).
    public func requestKeyframe(_ keyframe: Bool) {
        frame.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
    }

    /// The Y, U and V values at a pixel, for tests and diagnostics.
    public func yuv(x: Int, y: Int) -> (y: UInt8, u: UInt8, v: UInt8) {
        let luma = plane(0), cb = plane(1), cr = plane(2)
        return (luma.data[y * Int(luma.stride) + x], cb.data[(y / 2) * Int(cb.stride) + x / 2],
                cr.data[(y / 2) * Int(cr.stride) + x / 2])
    }
}
