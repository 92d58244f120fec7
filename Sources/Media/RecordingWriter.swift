import CFFmpeg
import CLazyLibraries

/// The container of a recording, chosen by the file's extension.
public enum RecordingContainer: String, Sendable, CaseIterable {
    /// Fragmented MP4: a fragment per keyframe, so a killed recorder leaves a playable file.
    case mp4
    /// Matroska: clusters are written as they fill, playable up to the last one.
    case mkv
    /// FLV, as sent to RTMP servers.
    case flv

    /// The container for `path`'s extension, or nil when there is none for it.
    public init?(path: String) {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        self.init(rawValue: String(path[path.index(after: dot)...]).lowercased())
    }

    var muxerName: String {
        switch self {
        case .mp4: return "mp4"
        case .mkv: return "matroska"
        case .flv: return "flv"
        }
    }
}

/// Writes encoded H.264 (and AAC, when given an audio encoder) into a file through libavformat, crash-safe: MP4 is fragmented at
/// every keyframe (`frag_keyframe+empty_moov+default_base_moof`) and every packet is flushed,
/// so whatever reached the disk before a crash plays.
public final class RecordingWriter {
    public let path: String
    public let container: RecordingContainer
    private let format: UnsafeMutablePointer<AVFormatContext>
    private let stream: UnsafeMutablePointer<AVStream>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let encoderTimeBase: AVRational
    private let audioStream: UnsafeMutablePointer<AVStream>?
    /// One more audio stream per source track (`sourceTrackTitles`), after the mix's.
    private var trackStreams: [UnsafeMutablePointer<AVStream>] = []
    private let audioTimeBase: AVRational
    private var finished = false
    /// False until the header is written: a writer whose opening failed has no file to finish.
    private var headerWritten = false
    public private(set) var bytesWritten: Int64 = 0
    /// Subtracted from every packet's timestamps, so that a recording that starts mid-stream
    /// starts at zero (set it to the first packet's pts).
    public var timestampOffset: Int64 = 0
    /// The same for audio packets, in samples.
    public var audioTimestampOffset: Int64 = 0

    /// Opens `path` for the video of `encoder` and, when given, the audio of `audioEncoder`.
    /// The container comes from the extension. With `sourceTrackTitles` (and an audio encoder),
    /// the audio is the mix, titled `mixTitle` and marked the default track, followed by one track
    /// per title, of the same format (`write(_:track:)`): MKV and MP4; FLV holds one audio track.
    public init(path: String, encoder: H264Encoder, audioEncoder: AACEncoder? = nil, mixTitle: String = "Mix",
                sourceTrackTitles: [String] = []) throws(MediaError) {
        guard let container = RecordingContainer(path: path) else {
            let ext = path.split(separator: ".").count > 1 ? String(path.split(separator: ".").last!) : ""
            throw .unsupportedContainer(extension: ext)
        }
        self.path = path
        self.container = container
        try requireLibrary(CLazyLibraries_avformat, for: "recordings are")
        var context: UnsafeMutablePointer<AVFormatContext>?
        try ffmpegCall("avformat_alloc_output_context2") {
            avformat_alloc_output_context2(&context, nil, container.muxerName, path)
        }
        guard let format = context, let stream = avformat_new_stream(format, nil), let packet = av_packet_alloc() else {
            avformat_free_context(context)
            throw .ffmpeg("avformat_new_stream", CFFmpeg_AVERROR(ENOMEM))
        }
        self.format = format
        self.stream = stream
        self.packet = packet
        encoderTimeBase = encoder.context.pointee.time_base
        audioTimeBase = audioEncoder?.context.pointee.time_base ?? AVRational(num: 1, den: 48000)
        audioStream = audioEncoder == nil ? nil : avformat_new_stream(format, nil)
        do throws(MediaError) {
            try ffmpegCall("avcodec_parameters_from_context") {
                avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context)
            }
            stream.pointee.time_base = encoderTimeBase
            stream.pointee.avg_frame_rate = encoder.context.pointee.framerate
            if let audioEncoder {
                guard let audioStream else { throw MediaError.ffmpeg("avformat_new_stream(audio)", CFFmpeg_AVERROR(ENOMEM)) }
                try ffmpegCall("avcodec_parameters_from_context(aac)") {
                    avcodec_parameters_from_context(audioStream.pointee.codecpar, audioEncoder.context)
                }
                audioStream.pointee.time_base = audioTimeBase
                // Packet times already place the encoder's priming samples before zero; an edit
                // list that trimmed them again would move the audio 1024 samples early.
                audioStream.pointee.codecpar.pointee.initial_padding = 0
                if !sourceTrackTitles.isEmpty && container != .flv {
                    // MKV shows `title`; MP4 keeps the name in its handler box (`handler_name`).
                    stream.pointee.disposition = AV_DISPOSITION_DEFAULT
                    av_dict_set(&audioStream.pointee.metadata, "title", mixTitle, 0)
                    av_dict_set(&audioStream.pointee.metadata, "handler_name", mixTitle, 0)
                    audioStream.pointee.disposition = AV_DISPOSITION_DEFAULT
                    for title in sourceTrackTitles {
                        guard let track = avformat_new_stream(format, nil) else {
                            throw MediaError.ffmpeg("avformat_new_stream(track)", CFFmpeg_AVERROR(ENOMEM))
                        }
                        try ffmpegCall("avcodec_parameters_copy(track)") {
                            avcodec_parameters_copy(track.pointee.codecpar, audioStream.pointee.codecpar)
                        }
                        track.pointee.time_base = audioTimeBase
                        track.pointee.disposition = 0
                        av_dict_set(&track.pointee.metadata, "title", title, 0)
                        av_dict_set(&track.pointee.metadata, "handler_name", title, 0)
                        trackStreams.append(track)
                    }
                }
            }
            try ffmpegCall("avio_open(\(path))") { avio_open(&format.pointee.pb, path, AVIO_FLAG_WRITE) }
            var options: OpaquePointer?
            defer { av_dict_free(&options) }
            if container == .mp4 {
                av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0)
            }
            format.pointee.flush_packets = 1
            try ffmpegCall("avformat_write_header") { avformat_write_header(format, &options) }
            headerWritten = true
        } catch {
            closeFile()
            throw error
        }
    }

    deinit {
        if headerWritten && !finished { try? finish() }
        var packet: UnsafeMutablePointer<AVPacket>? = self.packet
        av_packet_free(&packet)
        avformat_free_context(format)
    }

    /// Appends one encoded packet.
    public func write(_ encoded: EncodedVideoPacket) throws(MediaError) {
        try write(encoded.payload, pts: encoded.pts - timestampOffset, dts: encoded.dts - timestampOffset, duration: 1,
                  timeBase: encoderTimeBase, to: stream, isKeyframe: encoded.isKeyframe)
    }

    /// Appends one AAC packet (ignored when the writer has no audio stream).
    public func write(_ encoded: EncodedAudioPacket) throws(MediaError) {
        guard let audioStream else { return }
        let pts = encoded.pts - audioTimestampOffset
        try write(encoded.payload, pts: pts, dts: pts, duration: Int64(encoded.durationSamples),
                  timeBase: audioTimeBase, to: audioStream, isKeyframe: true)
    }

    /// Appends one packet of source track `track` (0: the first of `sourceTrackTitles`), placed as
    /// the mix's packets are (`audioTimestampOffset`); ignored when there is no such track.
    public func write(_ encoded: EncodedAudioPacket, track: Int) throws(MediaError) {
        guard track < trackStreams.count else { return }
        let pts = encoded.pts - audioTimestampOffset
        try write(encoded.payload, pts: pts, dts: pts, duration: Int64(encoded.durationSamples),
                  timeBase: audioTimeBase, to: trackStreams[track], isKeyframe: true)
    }

    /// How many source tracks the file has beside the mix.
    public var sourceTrackCount: Int { trackStreams.count }

    /// One packet of `stream`, its times in `timeBase`. After `finish()` a packet is left out: the
    /// pipelines' threads may still hand over one they took before the recording was removed from
    /// them, and the file is closed (writing to it then crashed in libavformat).
    private func write(_ data: PacketBuffer, pts: Int64, dts: Int64, duration: Int64, timeBase: AVRational,
                       to stream: UnsafeMutablePointer<AVStream>, isKeyframe: Bool) throws(MediaError) {
        guard !finished else { return }
        try ffmpegCall("av_new_packet") { av_new_packet(packet, Int32(data.count)) }
        data.copyBytes(to: packet.pointee.data)
        packet.pointee.pts = av_rescale_q(pts, timeBase, stream.pointee.time_base)
        packet.pointee.dts = av_rescale_q(dts, timeBase, stream.pointee.time_base)
        packet.pointee.duration = av_rescale_q(duration, timeBase, stream.pointee.time_base)
        packet.pointee.stream_index = stream.pointee.index
        if isKeyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        let result = av_interleaved_write_frame(format, packet)
        av_packet_unref(packet)
        if result < 0 { throw .ffmpeg("av_interleaved_write_frame", result) }
        bytesWritten = avio_tell(format.pointee.pb)
    }

    /// Writes the trailer and closes the file.
    public func finish() throws(MediaError) {
        guard headerWritten, !finished else { return }
        finished = true
        defer { closeFile() }
        try ffmpegCall("av_write_trailer") { av_write_trailer(format) }
        bytesWritten = avio_tell(format.pointee.pb)
    }

    private func closeFile() {
        if format.pointee.pb != nil { avio_closep(&format.pointee.pb) }
    }
}
