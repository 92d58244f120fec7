import CFFmpeg
import Glibc
import CLazyLibraries

/// A still picture from a PNG or JPEG file, decoded with libavformat and libavcodec and
/// converted to BGRx with libswscale: the pause image, the poor-network image.
public struct StillImage: Sendable {
    public let width: Int
    public let height: Int
    /// B G R X bytes, `width * 4` a row.
    public let bgrx: [UInt8]

    /// Decodes the first picture of the file at `path`.
    public static func load(path: String) throws(MediaError) -> StillImage {
        let decoded = try decodePicture(path: path, to: AV_PIX_FMT_BGR0)
        return StillImage(width: decoded.width, height: decoded.height, bgrx: decoded.pixels)
    }

    /// The first picture of the file at `path` as 4 bytes a pixel in `pixelFormat` (BGR0, BGRA).
    static func decodePicture(path: String, to pixelFormat: AVPixelFormat) throws(MediaError)
        -> (width: Int, height: Int, pixels: [UInt8])
    {
        MediaLogging.quietLibraries()
        try requireLibrary(CLazyLibraries_avformat, for: "picture files are")
        try requireLibrary(CLazyLibraries_swscale, for: "picture files are")
        var format: UnsafeMutablePointer<AVFormatContext>?
        // Opened here first: a FIFO or a device is refused without blocking (issue 30).
        let checked: Int32
        do { checked = try RegularFile.openForReading(path) } catch { throw .unusableFile(error) }
        defer { close(checked) }
        try ffmpegCall("avformat_open_input(\(path))") {
            avformat_open_input(&format, RegularFile.path(of: checked), nil, nil)
        }
        defer { avformat_close_input(&format) }
        guard let format else { throw .ffmpeg("avformat_open_input(\(path))", CFFmpeg_AVERROR(EINVAL)) }
        try ffmpegCall("avformat_find_stream_info(\(path))") { avformat_find_stream_info(format, nil) }
        var decoder: UnsafePointer<AVCodec>?
        let streamIndex = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0)
        guard streamIndex >= 0, let decoder else {
            throw .ffmpeg(call: "av_find_best_stream(\(path))", code: streamIndex, message: "no picture in the file")
        }
        guard let context = avcodec_alloc_context3(decoder) else { throw .ffmpeg("avcodec_alloc_context3", CFFmpeg_AVERROR(ENOMEM)) }
        defer {
            var doomed: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&doomed)
        }
        let stream = format.pointee.streams[Int(streamIndex)]!
        try ffmpegCall("avcodec_parameters_to_context") { avcodec_parameters_to_context(context, stream.pointee.codecpar) }
        try ffmpegCall("avcodec_open2(\(String(cString: decoder.pointee.name)))") { avcodec_open2(context, decoder, nil) }
        guard let packet = av_packet_alloc(), let frame = av_frame_alloc() else { throw .ffmpeg("av_frame_alloc", CFFmpeg_AVERROR(ENOMEM)) }
        defer {
            var doomedPacket: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&doomedPacket)
            var doomedFrame: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&doomedFrame)
        }
        var decoded = false
        while !decoded {
            let read = av_read_frame(format, packet)
            if read < 0 {
                try ffmpegCall("avcodec_send_packet(flush)") { avcodec_send_packet(context, nil) }
            } else if packet.pointee.stream_index != streamIndex {
                av_packet_unref(packet)
                continue
            } else {
                defer { av_packet_unref(packet) }
                try ffmpegCall("avcodec_send_packet(\(path))") { avcodec_send_packet(context, packet) }
            }
            let received = avcodec_receive_frame(context, frame)
            if received == 0 { decoded = true } else if read < 0 || received != CFFmpeg_AVERROR(EAGAIN) {
                throw .ffmpeg("avcodec_receive_frame(\(path))", received)
            }
        }
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        guard let scaler = sws_getContext(Int32(width), Int32(height), AVPixelFormat(frame.pointee.format), Int32(width),
                                          Int32(height), pixelFormat, SWS_BILINEAR, nil, nil, nil)
        else { throw .ffmpeg(call: "sws_getContext", code: -1, message: "cannot convert this picture's pixel format") }
        defer { sws_freeContext(scaler) }
        // Room past the last row: swscale's vector code may write a little beyond it.
        var pixels = [UInt8](repeating: 0, count: width * height * 4 + 256)
        let scaled = pixels.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var destination: [UnsafeMutablePointer<UInt8>?] = [buffer.baseAddress, nil, nil, nil]
            var strides: [Int32] = [Int32(width * 4), 0, 0, 0]
            return withUnsafePointer(to: &frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { sourcePlanes in
                    withUnsafePointer(to: &frame.pointee.linesize) { sizes in
                        sizes.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                            sws_scale(scaler, sourcePlanes, sourceStrides, 0, Int32(height), &destination, &strides)
                        }
                    }
                }
            }
        }
        if scaled < 0 { throw .ffmpeg("sws_scale", scaled) }
        pixels.removeLast(256)
        return (width, height, pixels)
    }

    /// Draws the picture into `frame` as `scaleMode` says (fit: black bars around it).
    public func render(into frame: VideoFrame, scaleMode: ScaleMode = .fit) throws(PixelConversionError) {
        frame.fillBlack()
        let result = bgrx.withUnsafeBytes { bytes -> Result<Void, PixelConversionError> in
            do throws(PixelConversionError) {
                try FrameConverter(scaleMode: scaleMode).convertBGRx(bytes, width: width, height: height,
                                                                     strideBytes: width * 4, into: frame)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }
}
