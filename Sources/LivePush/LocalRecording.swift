import Foundation
import Media

/// A recording of the encoded stream into a file: starts at a keyframe, reports progress, and
/// closes the file cleanly (fragmented MP4 stays playable even if the process is killed).
final class LocalRecording: EncodedVideoSink, @unchecked Sendable {
    let path: String
    private let writer: RecordingWriter
    private let progressIntervalMs: Int
    private let lock = NSLock()
    private var startedPtsMs: Int64?
    private var lastProgressMs = 0
    private(set) var durationMs = 0
    private(set) var failed: MediaError?
    var onProgress: (@Sendable (Int) -> Void)?
    var onFailure: (@Sendable (MediaError) -> Void)?

    /// Checks `path` as the reference SDK does; returns the file, or the reference's error code.
    static func open(path: String, encoder: H264Encoder, progressIntervalMs: Int) -> Result<LocalRecording, Int32Error> {
        guard RecordingContainer(path: path) != nil else { return .failure(Int32Error(LocalRecordingCode.unsupportedExtension)) }
        if FileManager.default.fileExists(atPath: path) { return .failure(Int32Error(LocalRecordingCode.fileExists)) }
        let directory = (path as NSString).deletingLastPathComponent
        if !FileManager.default.isWritableFile(atPath: directory.isEmpty ? "." : directory) {
            return .failure(Int32Error(LocalRecordingCode.noPermission))
        }
        do {
            let writer = try RecordingWriter(path: path, encoder: encoder)
            return .success(LocalRecording(path: path, writer: writer, progressIntervalMs: progressIntervalMs))
        } catch {
            // The file could not be created there (no permission, a read-only or special file
            // system, a missing directory): the reference's "no permission" code.
            if case .ffmpeg(let call, _, _) = error, call.hasPrefix("avio_open") {
                return .failure(Int32Error(LocalRecordingCode.noPermission))
            }
            return .failure(Int32Error(LocalRecordingCode.internalError))
        }
    }

    private init(path: String, writer: RecordingWriter, progressIntervalMs: Int) {
        self.path = path
        self.writer = writer
        self.progressIntervalMs = max(1, progressIntervalMs)
    }

    func receive(_ packet: EncodedVideoPacket, ptsMs: Int64) {
        lock.lock()
        defer { lock.unlock() }
        guard failed == nil else { return }
        if startedPtsMs == nil {
            guard packet.isKeyframe else { return }  // a recording starts on a keyframe
            startedPtsMs = ptsMs
            writer.timestampOffset = packet.dts
        }
        do throws(MediaError) {
            try writer.write(packet)
        } catch {
            failed = error
            onFailure?(error)
            return
        }
        durationMs = Int(ptsMs - (startedPtsMs ?? ptsMs))
        if durationMs - lastProgressMs >= progressIntervalMs {
            lastProgressMs = durationMs
            onProgress?(durationMs)
        }
    }

    var bytesWritten: Int64 {
        lock.lock()
        defer { lock.unlock() }
        return writer.bytesWritten
    }

    /// Closes the file; nil when it is complete, else what failed.
    func finish() -> MediaError? {
        lock.lock()
        defer { lock.unlock() }
        if let failed { return failed }
        do throws(MediaError) {
            try writer.finish()
            return nil
        } catch {
            return error
        }
    }
}

/// An Int32 code as an Error (for `Result`).
struct Int32Error: Error {
    let code: Int32
    init(_ code: Int32) { self.code = code }
}
