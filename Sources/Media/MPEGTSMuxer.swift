import CFFmpeg
import CLazyLibraries

/// The codec parameters of an encoder pair, copied once (on the thread that made the encoders),
/// so that muxers made later on other threads never read an encoder's context while it encodes.
public final class MuxerStreamParameters: @unchecked Sendable {
    fileprivate let video: UnsafeMutablePointer<AVCodecParameters>
    fileprivate let audio: UnsafeMutablePointer<AVCodecParameters>?

    public init(encoder: H264Encoder, audioEncoder: AACEncoder?) throws(MediaError) {
        guard let video = avcodec_parameters_alloc() else { throw .ffmpeg("avcodec_parameters_alloc", CFFmpeg_AVERROR(ENOMEM)) }
        self.video = video
        audio = audioEncoder == nil ? nil : avcodec_parameters_alloc()
        try ffmpegCall("avcodec_parameters_from_context") { avcodec_parameters_from_context(video, encoder.context) }
        if let audioEncoder, let audio {
            try ffmpegCall("avcodec_parameters_from_context(aac)") { avcodec_parameters_from_context(audio, audioEncoder.context) }
        }
    }

    deinit {
        var video: UnsafeMutablePointer<AVCodecParameters>? = self.video
        avcodec_parameters_free(&video)
        var audio = self.audio
        avcodec_parameters_free(&audio)
    }
}

/// MPEG-TS (H.264 and AAC) muxed by libavformat into memory, for SRT: a custom AVIO hands every
/// 1316 bytes (seven 188-byte TS packets, SRT's live payload) to `output` as they are made.
/// Timestamps are milliseconds on the stream's timeline. Not thread-safe: one sender thread.
public final class MPEGTSMuxer {
    /// 7 TS packets: what one SRT live packet carries.
    public static let chunkBytes = 1316
    private let format: UnsafeMutablePointer<AVFormatContext>
    private let videoStream: UnsafeMutablePointer<AVStream>
    private let audioStream: UnsafeMutablePointer<AVStream>?
    private let packet: UnsafeMutablePointer<AVPacket>
    private let sink: TSChunkSink
    private static let millisecond = AVRational(num: 1, den: 1000)

    /// `output` gets each chunk; it returns false to fail the write (the muxer call then throws).
    public init(streams: MuxerStreamParameters, output: @escaping (UnsafeRawBufferPointer) -> Bool) throws(MediaError)
    {
        sink = TSChunkSink(output)
        try requireLibrary(CLazyLibraries_avformat, for: "SRT's MPEG-TS is")
        var context: UnsafeMutablePointer<AVFormatContext>?
        try ffmpegCall("avformat_alloc_output_context2(mpegts)") {
            avformat_alloc_output_context2(&context, nil, "mpegts", nil)
        }
        guard let format = context, let videoStream = avformat_new_stream(format, nil), let packet = av_packet_alloc()
        else {
            avformat_free_context(context)
            throw .ffmpeg("avformat_new_stream", CFFmpeg_AVERROR(ENOMEM))
        }
        self.format = format
        self.videoStream = videoStream
        self.packet = packet
        audioStream = streams.audio == nil ? nil : avformat_new_stream(format, nil)
        do throws(MediaError) {
            try ffmpegCall("avcodec_parameters_copy") { avcodec_parameters_copy(videoStream.pointee.codecpar, streams.video) }
            videoStream.pointee.time_base = Self.millisecond
            if let audio = streams.audio {
                guard let audioStream else { throw MediaError.ffmpeg("avformat_new_stream(audio)", CFFmpeg_AVERROR(ENOMEM)) }
                try ffmpegCall("avcodec_parameters_copy(aac)") { avcodec_parameters_copy(audioStream.pointee.codecpar, audio) }
                audioStream.pointee.time_base = Self.millisecond
            }
            guard let buffer = av_malloc(Self.chunkBytes)?.assumingMemoryBound(to: UInt8.self),
                  let io = avio_alloc_context(buffer, Int32(Self.chunkBytes), 1, Unmanaged.passUnretained(sink).toOpaque(),
                                              nil, tsWritePacket, nil)
            else { throw MediaError.ffmpeg("avio_alloc_context", CFFmpeg_AVERROR(ENOMEM)) }
            io.pointee.seekable = 0
            format.pointee.pb = io
            format.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            format.pointee.flush_packets = 1
            try ffmpegCall("avformat_write_header(mpegts)") { avformat_write_header(format, nil) }
        } catch {
            Self.freeIO(format)
            var packet: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&packet)
            avformat_free_context(format)
            throw error
        }
    }

    deinit {
        Self.freeIO(format)
        var packet: UnsafeMutablePointer<AVPacket>? = self.packet
        av_packet_free(&packet)
        avformat_free_context(format)
    }

    private static func freeIO(_ format: UnsafeMutablePointer<AVFormatContext>) {
        guard format.pointee.pb != nil else { return }
        av_freep(&format.pointee.pb.pointee.buffer)
        avio_context_free(&format.pointee.pb)
    }

    /// One H.264 access unit (Annex B, as the encoder makes it) at `timestampMs`.
    public func write(video encoded: EncodedVideoPacket, timestampMs: Int64) throws(MediaError) {
        try write(encoded.payload, timestampMs: timestampMs, to: videoStream, isKeyframe: encoded.isKeyframe)
    }

    /// One AAC frame at `timestampMs` (ignored without an audio stream).
    public func write(audio encoded: EncodedAudioPacket, timestampMs: Int64) throws(MediaError) {
        guard let audioStream else { return }
        try write(encoded.payload, timestampMs: timestampMs, to: audioStream, isKeyframe: true)
    }

    private func write(_ data: PacketBuffer, timestampMs: Int64, to stream: UnsafeMutablePointer<AVStream>,
                       isKeyframe: Bool) throws(MediaError) {
        try ffmpegCall("av_new_packet") { av_new_packet(packet, Int32(data.count)) }
        data.copyBytes(to: packet.pointee.data)
        packet.pointee.pts = av_rescale_q(timestampMs, Self.millisecond, stream.pointee.time_base)
        packet.pointee.dts = packet.pointee.pts
        packet.pointee.stream_index = stream.pointee.index
        if isKeyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        // In order already (one sender thread, timestamps from one clock): no interleaving queue,
        // so nothing waits in the muxer for the other stream.
        let result = av_write_frame(format, packet)
        av_packet_unref(packet)
        if result < 0 { throw .ffmpeg("av_write_frame(mpegts)", result) }
    }
}

/// Where the AVIO callback delivers chunks: reached from C through `Unmanaged`.
private final class TSChunkSink {
    let output: (UnsafeRawBufferPointer) -> Bool
    init(_ output: @escaping (UnsafeRawBufferPointer) -> Bool) { self.output = output }
}

/// libavformat's write_packet: called with at most `chunkBytes` at a time, TS-packet aligned.
private func tsWritePacket(_ opaque: UnsafeMutableRawPointer?, _ bytes: UnsafeMutablePointer<UInt8>?,
                           _ count: Int32) -> Int32
{
    guard let opaque, let bytes, count > 0 else { return 0 }
    let sink = Unmanaged<TSChunkSink>.fromOpaque(opaque).takeUnretainedValue()
    return sink.output(UnsafeRawBufferPointer(start: bytes, count: Int(count))) ? count : CFFmpeg_AVERROR(EIO)
}
