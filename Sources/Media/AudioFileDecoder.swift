import CFFmpeg
import Glibc
import CLazyLibraries

/// Decodes the first audio stream of a music file (MP3, AAC/M4A, FLAC, Ogg Vorbis and Opus,
/// WAV: whatever libavformat and libavcodec read) to interleaved float at a chosen rate and
/// channel count (libswresample). `rewind` starts again from the beginning without resetting
/// the resampler, so a file played in a loop joins its end to its start without a gap.
public final class AudioFileDecoder {
    public let path: String
    public let outputRateHz: Int
    public let outputChannels: Int
    /// The file's length, from its container (0 when the container does not say).
    public let durationMs: Int
    /// The decoder's name ("mp3float", "aac", "flac", ...).
    public let codecName: String
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var resampler: OpaquePointer?
    private var resamplerInput: (format: Int32, rateHz: Int32, channels: Int32) = (-1, 0, 0)
    private let packet: UnsafeMutablePointer<AVPacket>
    private let frame: UnsafeMutablePointer<AVFrame>
    private let streamIndex: Int32
    private var draining = false

    /// Opens `path`; throws with words a user can act on when it is missing, not audio, or
    /// in a format this FFmpeg cannot decode.
    public init(path: String, outputRateHz: Int, outputChannels: Int) throws(MediaError) {
        MediaLogging.quietLibraries()
        self.path = path
        self.outputRateHz = outputRateHz
        self.outputChannels = outputChannels
        guard let packet = av_packet_alloc(), let frame = av_frame_alloc() else {
            throw .ffmpeg("av_frame_alloc", CFFmpeg_AVERROR(ENOMEM))
        }
        self.packet = packet
        self.frame = frame
        var format: UnsafeMutablePointer<AVFormatContext>?
        var codec: UnsafeMutablePointer<AVCodecContext>?
        var index: Int32 = -1
        var name = ""
        do throws(MediaError) {
            try requireLibrary(CLazyLibraries_avformat, for: "audio files are")
            // Opened here first: a FIFO or a device is refused without blocking (issue 30).
            let checked: Int32
            do { checked = try RegularFile.openForReading(path) } catch { throw .unusableFile(error) }
            defer { close(checked) }
            try ffmpegCall("open '\(path)'") { avformat_open_input(&format, RegularFile.path(of: checked), nil, nil) }
            try ffmpegCall("read the streams of '\(path)'") { avformat_find_stream_info(format, nil) }
            var decoder: UnsafePointer<AVCodec>?
            index = av_find_best_stream(format, AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0)
            guard index >= 0, let decoder, let stream = format?.pointee.streams[Int(index)] else {
                throw .ffmpeg(call: "open '\(path)'", code: index,
                                        message: "no audio stream this FFmpeg can decode in the file")
            }
            codec = avcodec_alloc_context3(decoder)
            try ffmpegCall("avcodec_parameters_to_context") { avcodec_parameters_to_context(codec, stream.pointee.codecpar) }
            codec?.pointee.pkt_timebase = stream.pointee.time_base
            name = String(cString: decoder.pointee.name)
            try ffmpegCall("open the \(name) decoder for '\(path)'") { avcodec_open2(codec, decoder, nil) }
        } catch {
            avcodec_free_context(&codec)
            avformat_close_input(&format)
            var doomedPacket: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&doomedPacket)
            var doomedFrame: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&doomedFrame)
            throw error
        }
        self.format = format
        self.codec = codec
        streamIndex = index
        codecName = name
        let duration = format?.pointee.duration ?? 0
        durationMs = duration > 0 ? Int(duration / 1000) : 0  // AV_TIME_BASE is 1 000 000
    }

    deinit {
        swr_free(&resampler)
        avcodec_free_context(&codec)
        avformat_close_input(&format)
        var doomedPacket: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&doomedPacket)
        var doomedFrame: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&doomedFrame)
    }

    /// The next decoded samples (interleaved, `outputChannels` per frame, at `outputRateHz`);
    /// empty at the end of the file. A damaged packet is skipped; a file that cannot be read
    /// any more throws.
    public func decodeNext() throws(MediaError) -> [Float] {
        while true {
            let received = avcodec_receive_frame(codec, frame)
            if received == 0 {
                defer { av_frame_unref(frame) }
                let samples = try convert(frame)
                if !samples.isEmpty { return samples }
                continue
            }
            if received == CFFmpeg_AVERROR_EOF() { return [] }
            if received != CFFmpeg_AVERROR(EAGAIN) { throw .ffmpeg("decode '\(path)'", received) }
            if draining { return [] }
            let read = av_read_frame(format, packet)
            if read < 0 {
                // The end (or a read error, treated as the end): drain the decoder.
                draining = true
                _ = avcodec_send_packet(codec, nil)
                continue
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            let sent = avcodec_send_packet(codec, packet)
            if sent < 0 && sent != CFFmpeg_AVERROR(EAGAIN) && sent != CFFmpeg_AVERROR(EINVAL) {
                continue  // AVERROR_INVALIDDATA and friends: one damaged packet, go on with the next
            }
        }
    }

    /// Back to the start of the file. The resampler keeps its state, so the first samples
    /// after a rewind follow the last ones before it without a gap.
    public func rewind() throws(MediaError) {
        try ffmpegCall("seek to the start of '\(path)'") {
            avformat_seek_file(format, -1, Int64.min, 0, 0, 0)
        }
        avcodec_flush_buffers(codec)
        draining = false
    }

    private func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws(MediaError) -> [Float] {
        let input = (format: frame.pointee.format, rateHz: frame.pointee.sample_rate,
                     channels: frame.pointee.ch_layout.nb_channels)
        if resampler == nil || input != resamplerInput {
            swr_free(&resampler)
            var outputLayout = AVChannelLayout()
            av_channel_layout_default(&outputLayout, Int32(outputChannels))
            defer { av_channel_layout_uninit(&outputLayout) }
            var context: OpaquePointer?
            try ffmpegCall("swr_alloc_set_opts2") {
                swr_alloc_set_opts2(&context, &outputLayout, AV_SAMPLE_FMT_FLT, Int32(outputRateHz),
                                    &frame.pointee.ch_layout, AVSampleFormat(input.format), input.rateHz, 0, nil)
            }
            resampler = context
            try ffmpegCall("swr_init") { swr_init(context) }
            resamplerInput = input
        }
        let inputFrames = frame.pointee.nb_samples
        let capacity = Int(swr_get_out_samples(resampler, inputFrames)) + 16
        var output = [Float](repeating: 0, count: capacity * outputChannels)
        let produced = output.withUnsafeMutableBytes { bytes -> Int32 in
            var plane: UnsafeMutablePointer<UInt8>? = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return frame.pointee.extended_data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                swr_convert(resampler, &plane, Int32(capacity), planes, inputFrames)
            }
        }
        if produced < 0 { throw .ffmpeg("swr_convert", produced) }
        output.removeLast(output.count - Int(produced) * outputChannels)
        return output
    }
}
