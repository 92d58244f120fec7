import CFFmpeg

/// How to encode AAC-LC.
public struct AACEncoderSettings: Equatable, Sendable {
    public var sampleRateHz: Int
    public var channels: Int
    public var bitrateKbps: Int

    public init(sampleRateHz: Int = 48000, channels: Int = 2, bitrateKbps: Int = 128) {
        self.sampleRateHz = sampleRateHz
        self.channels = channels
        self.bitrateKbps = bitrateKbps
    }
}

/// One raw AAC frame (no ADTS header), timed in samples of the encoder's rate.
public struct EncodedAudioPacket: Equatable, Sendable {
    /// The frame's bytes in a pooled buffer (reused once every queue and sink has dropped the packet).
    public let payload: PacketBuffer
    /// A copy of the bytes (tests, one-off uses; hot paths read `payload` in place).
    public var data: [UInt8] { payload.bytes }
    /// Presentation time of the frame's first sample, in samples; the encoder's priming
    /// delay makes the first packets' times negative (−1024 for FFmpeg's aac).
    public let pts: Int64
    public let durationSamples: Int

    public init(payload: PacketBuffer, pts: Int64, durationSamples: Int) {
        self.payload = payload
        self.pts = pts
        self.durationSamples = durationSamples
    }
}

/// AAC-LC through FFmpeg's native encoder. Takes interleaved float PCM in any amount, cuts it
/// into the codec's 1024-sample frames (planar, as the encoder wants) and returns the packets.
public final class AACEncoder {
    public let settings: AACEncoderSettings
    let context: UnsafeMutablePointer<AVCodecContext>
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    /// Samples per channel in one AAC frame (1024).
    public let frameSamples: Int
    private var pending: [Float] = []
    private var nextPts: Int64 = 0
    /// Where encoded frames are copied: steady state reuses the buffers the sinks gave back.
    private let packetPool = PacketBufferPool()

    public init(settings: AACEncoderSettings) throws(MediaError) {
        MediaLogging.quietLibraries()
        guard [44100, 48000, 32000, 22050, 16000].contains(settings.sampleRateHz), (1...2).contains(settings.channels) else {
            throw .ffmpeg(call: "AACEncoder", code: CFFmpeg_AVERROR(EINVAL), message:
                "AAC at \(settings.sampleRateHz) Hz with \(settings.channels) channels is not supported: use 44100 or 48000 Hz, 1 or 2 channels")
        }
        guard let codec = avcodec_find_encoder_by_name("aac") else { throw .encoderNotFound("aac") }
        guard let context = avcodec_alloc_context3(codec), let frame = av_frame_alloc(), let packet = av_packet_alloc() else {
            throw .ffmpeg("avcodec_alloc_context3(aac)", CFFmpeg_AVERROR(ENOMEM))
        }
        self.settings = settings
        self.context = context
        self.frame = frame
        self.packet = packet
        context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        context.pointee.sample_rate = Int32(settings.sampleRateHz)
        av_channel_layout_default(&context.pointee.ch_layout, Int32(settings.channels))
        context.pointee.bit_rate = Int64(settings.bitrateKbps) * 1000
        context.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRateHz))
        context.pointee.profile = FF_PROFILE_AAC_LOW
        context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
        frameSamples = 1024
        try ffmpegCall("avcodec_open2(aac)") { avcodec_open2(context, codec, nil) }
        frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.pointee.nb_samples = context.pointee.frame_size
        frame.pointee.sample_rate = context.pointee.sample_rate
        try ffmpegCall("av_channel_layout_copy") { av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout) }
        try ffmpegCall("av_frame_get_buffer(aac)") { av_frame_get_buffer(frame, 0) }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = self.context
        avcodec_free_context(&context)
        var frame: UnsafeMutablePointer<AVFrame>? = self.frame
        av_frame_free(&frame)
        var packet: UnsafeMutablePointer<AVPacket>? = self.packet
        av_packet_free(&packet)
    }

    /// The AudioSpecificConfig (2 bytes for AAC-LC) that FLV's sequence header and MP4 carry.
    public var audioSpecificConfig: [UInt8] {
        guard let data = context.pointee.extradata, context.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(context.pointee.extradata_size)))
    }

    /// Encodes interleaved `samples` (`channels` per frame, continuing the previous call's);
    /// returns the packets that came out.
    public func encode(_ samples: [Float]) throws(MediaError) -> [EncodedAudioPacket] {
        var packets: [EncodedAudioPacket] = []
        try encode(samples, into: &packets)
        return packets
    }

    /// `encode(_:)` into `packets` (emptied first, its capacity kept): no allocation per frame.
    public func encode(_ samples: [Float], into packets: inout [EncodedAudioPacket]) throws(MediaError) {
        packets.removeAll(keepingCapacity: true)
        pending += samples
        let channels = settings.channels
        let frameValues = frameSamples * channels
        var consumed = 0
        while pending.count - consumed >= frameValues {
            try ffmpegCall("av_frame_make_writable(aac)") { av_frame_make_writable(frame) }
            for channel in 0..<channels {
                let plane = UnsafeMutableRawPointer(frame.pointee.extended_data[channel]!).assumingMemoryBound(to: Float.self)
                for index in 0..<frameSamples { plane[index] = pending[consumed + index * channels + channel] }
            }
            consumed += frameValues
            frame.pointee.pts = nextPts
            nextPts += Int64(frameSamples)
            try ffmpegCall("avcodec_send_frame(aac)") { avcodec_send_frame(context, frame) }
            try receivePackets(into: &packets)
        }
        pending.removeFirst(consumed)
    }

    /// Drains the encoder at the end of the stream (a partial last frame is dropped).
    public func flush() throws(MediaError) -> [EncodedAudioPacket] {
        try ffmpegCall("avcodec_send_frame(aac flush)") { avcodec_send_frame(context, nil) }
        var packets: [EncodedAudioPacket] = []
        try receivePackets(into: &packets)
        return packets
    }

    private func receivePackets(into packets: inout [EncodedAudioPacket]) throws(MediaError) {
        while true {
            let result = avcodec_receive_packet(context, packet)
            if result == CFFmpeg_AVERROR(EAGAIN) || result == CFFmpeg_AVERROR_EOF() { return }
            if result < 0 { throw .ffmpeg("avcodec_receive_packet(aac)", result) }
            defer { av_packet_unref(packet) }
            let buffer = packetPool.take(copying: UnsafeRawBufferPointer(start: packet.pointee.data,
                                                                         count: Int(packet.pointee.size)))
            packets.append(EncodedAudioPacket(payload: buffer, pts: packet.pointee.pts,
                                              durationSamples: Int(packet.pointee.duration)))
        }
    }
}
