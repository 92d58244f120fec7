import CFFmpeg
import CYUV

/// PNG files of `VideoFrame`s through libavcodec's png encoder: `LivePusher.snapshot`. The
/// picture is converted to RGB with libyuv (I420ToRAW: BT.601 limited range, the matrix the
/// stream is tagged with). One encoder per picture size; not thread-safe (one caller at a time).
public final class PNGEncoder {
    public let width: Int
    public let height: Int
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let rgb: UnsafeMutablePointer<AVFrame>

    public init(width: Int, height: Int) throws(MediaError) {
        MediaLogging.quietLibraries()
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_PNG) else { throw .encoderNotFound("png") }
        guard let context = avcodec_alloc_context3(codec), let packet = av_packet_alloc(), let rgb = av_frame_alloc() else {
            throw .ffmpeg("avcodec_alloc_context3(png)", CFFmpeg_AVERROR(ENOMEM))
        }
        self.width = width
        self.height = height
        self.context = context
        self.packet = packet
        self.rgb = rgb
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = AV_PIX_FMT_RGB24
        context.pointee.time_base = AVRational(num: 1, den: 25)
        rgb.pointee.format = AV_PIX_FMT_RGB24.rawValue
        rgb.pointee.width = Int32(width)
        rgb.pointee.height = Int32(height)
        try ffmpegCall("av_frame_get_buffer(rgb24)") { av_frame_get_buffer(rgb, 32) }
        try ffmpegCall("avcodec_open2(png)") { avcodec_open2(context, codec, nil) }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = self.context
        avcodec_free_context(&context)
        var packet: UnsafeMutablePointer<AVPacket>? = self.packet
        av_packet_free(&packet)
        var rgb: UnsafeMutablePointer<AVFrame>? = self.rgb
        av_frame_free(&rgb)
    }

    /// The PNG file bytes of `frame` (which must have this encoder's size).
    public func encode(_ frame: VideoFrame) throws(MediaError) -> [UInt8] {
        guard frame.width == width, frame.height == height else {
            throw .invalidSize(width: frame.width, height: frame.height, reason: "the PNG encoder is \(width)x\(height)")
        }
        try ffmpegCall("av_frame_make_writable(rgb24)") { av_frame_make_writable(rgb) }
        let y = frame.plane(0), u = frame.plane(1), v = frame.plane(2)
        let converted = I420ToRAW(y.data, y.stride, u.data, u.stride, v.data, v.stride, rgb.pointee.data.0,
                                  rgb.pointee.linesize.0, Int32(width), Int32(height))
        if converted != 0 { throw .ffmpeg(call: "I420ToRAW", code: converted, message: "libyuv could not convert the picture") }
        try ffmpegCall("avcodec_send_frame(png)") { avcodec_send_frame(context, rgb) }
        var bytes: [UInt8] = []
        try receiveEncodedPackets(context, packet, name: "png") { bytes += UnsafeBufferPointer(start: $0.data, count: Int($0.size)) }
        return bytes
    }
}
