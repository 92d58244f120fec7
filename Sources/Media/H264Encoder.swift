import CFFmpeg

/// How to encode H.264 for live push.
public struct H264EncoderSettings: Equatable, Sendable {
    public var width: Int
    public var height: Int
    public var fps: Int
    /// Seconds between keyframes.
    public var gopSeconds: Int = 2
    /// Constant bitrate target; the VBV buffer holds one second of it (live push sizing).
    public var bitrateKbps: Int
    public var encoder: H264EncoderName = .libx264
    /// Preset, profile, tune and threads (H264EncoderOptions.swift).
    public var tuning = H264EncoderTuning()
    /// Constant quality 0...51 instead of CBR (`bitrateKbps` is then unused); nil for live push.
    public var crf: Int?

    public init(width: Int, height: Int, fps: Int, bitrateKbps: Int) {
        self.width = width
        self.height = height
        self.fps = fps
        self.bitrateKbps = bitrateKbps
    }
}

/// One encoded access unit: H.264 in Annex-B form, timed in frames of the encoder's rate. Its bytes
/// live in a pooled `PacketBuffer` (reused once every queue and sink has dropped the packet).
public struct EncodedVideoPacket: Equatable, Sendable {
    public let payload: PacketBuffer
    /// A copy of the bytes (tests, one-off uses; hot paths read `payload` in place).
    public var data: [UInt8] { payload.bytes }
    /// Presentation and decoding time, in frames (1/fps seconds).
    public let pts: Int64
    public let dts: Int64
    public let isKeyframe: Bool

    public init(payload: PacketBuffer, pts: Int64, dts: Int64, isKeyframe: Bool) {
        self.payload = payload
        self.pts = pts
        self.dts = dts
        self.isKeyframe = isKeyframe
    }

    /// A packet holding a copy of `data`, outside any pool.
    public init(data: [UInt8], pts: Int64, dts: Int64, isKeyframe: Bool) {
        let buffer = PacketBuffer(capacity: data.count)
        data.withUnsafeBytes { buffer.assign($0) }
        self.init(payload: buffer, pts: pts, dts: dts, isKeyframe: isKeyframe)
    }
}

/// H.264 through libavcodec: libx264 with preset veryfast and tune zerolatency by default, CBR with a
/// one-second VBV, a keyframe every GOP, no B-frames, the BT.601 limited-range matrix tagged
/// in the VUI (what libyuv's ARGBToI420 produces), and SPS/PPS as global extradata for
/// containers (and repeated before keyframes for live streams).
public final class H264Encoder {
    public let settings: H264EncoderSettings
    /// The bitrate encoding runs at now: `settings.bitrateKbps` until `setBitrate` changes it.
    public private(set) var bitrateKbps: Int
    let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    /// x264's options SEI, put back into every keyframe (X264VersionSEI.swift).
    private var versionSEI = X264VersionSEI()
    /// Where encoded packets are copied: steady state reuses the buffers the sinks gave back.
    private let packetPool = PacketBufferPool()

    public init(settings: H264EncoderSettings) throws(MediaError) {
        MediaLogging.quietLibraries()
        guard settings.width > 0, settings.height > 0, settings.width % 2 == 0, settings.height % 2 == 0 else {
            throw .invalidSize(width: settings.width, height: settings.height, reason: "H.264 4:2:0 needs an even size")
        }
        guard let codec = avcodec_find_encoder_by_name(settings.encoder.rawValue) else {
            throw .encoderNotFound(settings.encoder.rawValue)
        }
        guard let context = avcodec_alloc_context3(codec), let packet = av_packet_alloc() else {
            throw .ffmpeg("avcodec_alloc_context3", CFFmpeg_AVERROR(ENOMEM))
        }
        self.settings = settings
        self.context = context
        self.packet = packet
        bitrateKbps = settings.bitrateKbps
        context.pointee.width = Int32(settings.width)
        context.pointee.height = Int32(settings.height)
        context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        context.pointee.time_base = AVRational(num: 1, den: Int32(settings.fps))
        context.pointee.framerate = AVRational(num: Int32(settings.fps), den: 1)
        context.pointee.gop_size = Int32(settings.fps * settings.gopSeconds)
        context.pointee.max_b_frames = 0
        let bitsPerSecond = Int64(settings.bitrateKbps) * 1000
        context.pointee.bit_rate = bitsPerSecond
        context.pointee.rc_max_rate = bitsPerSecond
        context.pointee.rc_buffer_size = Int32(clamping: bitsPerSecond)
        context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
        context.pointee.colorspace = AVCOL_SPC_SMPTE170M
        context.pointee.color_primaries = AVCOL_PRI_SMPTE170M
        context.pointee.color_trc = AVCOL_TRC_SMPTE170M
        context.pointee.color_range = AVCOL_RANGE_MPEG
        Self.applyTuning(settings, to: context)
        // Every stored property is set: if opening fails, deinit frees the context and packet.
        try ffmpegCall("avcodec_open2(\(settings.encoder.rawValue))") { avcodec_open2(context, codec, nil) }
    }

    deinit { release() }

    private func release() {
        var context: UnsafeMutablePointer<AVCodecContext>? = self.context
        avcodec_free_context(&context)
        var packet: UnsafeMutablePointer<AVPacket>? = self.packet
        av_packet_free(&packet)
    }

    /// SPS and PPS in Annex-B form (the avcC of a container is built from these).
    public var extradata: [UInt8] {
        guard let data = context.pointee.extradata, context.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(context.pointee.extradata_size)))
    }

    /// Changes the CBR target (and the one-second VBV with it) from the next frame on; libx264
    /// reconfigures itself without a new keyframe. Call it from the thread that encodes.
    public func setBitrate(kbps: Int) {
        let bitsPerSecond = Int64(kbps) * 1000
        context.pointee.bit_rate = bitsPerSecond
        context.pointee.rc_max_rate = bitsPerSecond
        context.pointee.rc_buffer_size = Int32(clamping: bitsPerSecond)
        bitrateKbps = kbps
    }

    /// Encodes `frame` as frame number `pts` (or, with nil, drains the encoder at the end);
    /// returns the packets that came out.
    public func encode(_ frame: VideoFrame?, pts: Int64) throws(MediaError) -> [EncodedVideoPacket] {
        var packets: [EncodedVideoPacket] = []
        try encode(frame, pts: pts, into: &packets)
        return packets
    }

    /// `encode(_:pts:)` into `packets` (emptied first, its capacity kept): no allocation per frame.
    public func encode(_ frame: VideoFrame?, pts: Int64, into packets: inout [EncodedVideoPacket]) throws(MediaError) {
        packets.removeAll(keepingCapacity: true)
        if let frame {
            frame.frame.pointee.pts = pts
            try ffmpegCall("avcodec_send_frame") { avcodec_send_frame(context, frame.frame) }
        } else {
            try ffmpegCall("avcodec_send_frame(flush)") { avcodec_send_frame(context, nil) }
        }
        try receiveEncodedPackets(context, packet, name: settings.encoder.rawValue) { packet in
            let isKeyframe = packet.flags & AV_PKT_FLAG_KEY != 0
            let bytes = UnsafeRawBufferPointer(start: packet.data, count: Int(packet.size))
            let buffer = versionSEI.pass(bytes, isKeyframe: isKeyframe, pool: packetPool)
            packets.append(EncodedVideoPacket(payload: buffer, pts: packet.pts, dts: packet.dts, isKeyframe: isKeyframe))
        }
    }
}

/// FFmpeg's libraries print to stderr by default (x264's banner, its statistics); LivePush
/// reports through its own errors and observer instead, so only their errors are let through.
enum MediaLogging {
    private static let quieted: Void = { av_log_set_level(AV_LOG_ERROR) }()
    static func quietLibraries() { _ = quieted }
}
