import CFFmpeg

/// Still JPEG pictures of `VideoFrame`s through libavcodec's mjpeg encoder: the dashboard's
/// live preview and `LivePusher.snapshotJPEG`. One encoder per picture size; not thread-safe
/// (one caller at a time).
public final class JPEGEncoder {
    public let width: Int
    public let height: Int
    /// 2 (best) to 31 (smallest), the encoder's quantizer scale.
    public let quality: Int
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>

    public init(width: Int, height: Int, quality: Int = 5) throws(MediaError) {
        MediaLogging.quietLibraries()
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else { throw .encoderNotFound("mjpeg") }
        guard let context = avcodec_alloc_context3(codec), let packet = av_packet_alloc() else {
            throw .ffmpeg("avcodec_alloc_context3(mjpeg)", CFFmpeg_AVERROR(ENOMEM))
        }
        self.width = width
        self.height = height
        self.quality = max(2, min(31, quality))
        self.context = context
        self.packet = packet
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        // Our pictures are limited-range I420: mjpeg takes them tagged as such ("unofficial" JPEG,
        // which every browser and ffmpeg decode), so no conversion to full range is needed.
        context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        context.pointee.color_range = AVCOL_RANGE_MPEG
        context.pointee.strict_std_compliance = FF_COMPLIANCE_UNOFFICIAL
        context.pointee.time_base = AVRational(num: 1, den: 25)
        context.pointee.flags |= Int32(AV_CODEC_FLAG_QSCALE)
        context.pointee.global_quality = Int32(self.quality) * FF_QP2LAMBDA
        try ffmpegCall("avcodec_open2(mjpeg)") { avcodec_open2(context, codec, nil) }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = self.context
        avcodec_free_context(&context)
        var packet: UnsafeMutablePointer<AVPacket>? = self.packet
        av_packet_free(&packet)
    }

    /// The JPEG file bytes of `frame` (which must have this encoder's size).
    public func encode(_ frame: VideoFrame) throws(MediaError) -> [UInt8] {
        guard frame.width == width, frame.height == height else {
            throw .invalidSize(width: frame.width, height: frame.height, reason: "the JPEG encoder is \(width)x\(height)")
        }
        let savedType = frame.frame.pointee.pict_type
        frame.frame.pointee.quality = Int32(quality) * FF_QP2LAMBDA
        frame.frame.pointee.pict_type = AV_PICTURE_TYPE_I
        defer { frame.frame.pointee.pict_type = savedType }
        try ffmpegCall("avcodec_send_frame(mjpeg)") { avcodec_send_frame(context, frame.frame) }
        var bytes: [UInt8] = []
        try receiveEncodedPackets(context, packet, name: "mjpeg") { bytes += UnsafeBufferPointer(start: $0.data, count: Int($0.size)) }
        return bytes
    }
}
