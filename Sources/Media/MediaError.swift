import CFFmpeg
import CLazyLibraries

/// Why encoding, converting or writing media failed: the call, FFmpeg's code and words.
public enum MediaError: Error, Equatable, CustomStringConvertible {
    case ffmpeg(call: String, code: Int32, message: String)
    case encoderNotFound(String)
    case invalidSize(width: Int, height: Int, reason: String)
    case unsupportedContainer(extension: String)
    /// libavformat or libswscale (loaded on first use) could not be loaded: the loader's words, naming the
    /// library and the Debian package to install.
    case libraryMissing(String)
    /// A file a person named is not a regular file, or cannot be opened (RegularFile).
    case unusableFile(RegularFile.Failure)

    public var description: String {
        switch self {
        case .ffmpeg(let call, let code, let message): return "\(call) failed: \(message) (\(code))"
        case .encoderNotFound(let name): return "libavcodec has no encoder '\(name)'"
        case .invalidSize(let width, let height, let reason): return "size \(width)x\(height): \(reason)"
        case .unsupportedContainer(let ext):
            return "no recording format for '.\(ext)': use .mp4 (fragmented), .mkv or .flv"
        case .libraryMissing(let message): return message
        case .unusableFile(let failure): return failure.description
        }
    }

    /// An FFmpeg return code as an error, with av_strerror's words.
    static func ffmpeg(_ call: String, _ code: Int32) -> MediaError {
        var buffer = [CChar](repeating: 0, count: 256)
        _ = av_strerror(code, &buffer, buffer.count)
        let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return .ffmpeg(call: call, code: code, message: message)
    }
}

/// Takes every packet the encoder `context` has ready (avcodec_receive_packet until EAGAIN or
/// EOF) and hands each to `body` before unreferencing it; `name` names the encoder in errors.
func receiveEncodedPackets(_ context: UnsafeMutablePointer<AVCodecContext>, _ packet: UnsafeMutablePointer<AVPacket>,
                           name: String, _ body: (AVPacket) -> Void) throws(MediaError) {
    while true {
        let result = avcodec_receive_packet(context, packet)
        if result == CFFmpeg_AVERROR(EAGAIN) || result == CFFmpeg_AVERROR_EOF() { return }
        if result < 0 { throw .ffmpeg("avcodec_receive_packet(\(name))", result) }
        defer { av_packet_unref(packet) }
        body(packet.pointee)
    }
}

/// Throws `.libraryMissing` unless `library` (libavformat or libswscale, loaded on first use) and every
/// function Media calls in it could be loaded; `feature` says what needed it ("recordings are").
func requireLibrary(_ library: CLazyLibraries_library, for feature: String) throws(MediaError) {
    if let message = CLazyLibraries_check(library) {
        throw .libraryMissing("\(feature) not available: \(String(cString: message))")
    }
}

/// Runs an FFmpeg call that returns a negative code on failure.
@discardableResult
func ffmpegCall(_ name: String, _ body: () -> Int32) throws(MediaError) -> Int32 {
    let result = body()
    if result < 0 { throw MediaError.ffmpeg(name, result) }
    return result
}
