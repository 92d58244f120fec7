import Foundation
import Media

/// A recording of the encoded stream into a file: starts at a keyframe, reports progress, and
/// closes the file cleanly (fragmented MP4 stays playable even if the process is killed). With a
/// quality of its own (`RecordingQuality`), its video is a second encode of the same pictures
/// (`RecordingEncoder`) and the live packets are left aside; audio is the live AAC either way.
final class LocalRecording: EncodedMediaSink, PictureSink, @unchecked Sendable {
    let path: String
    private let writer: RecordingWriter
    private let ownEncoder: RecordingEncoder?
    private let progressIntervalMs: Int
    private let lock = NSLock()
    private var startedPtsMs: Int64?
    private var audioStarted = false
    private let audioRateHz: Int
    private var lastProgressMs = 0
    private(set) var durationMs = 0
    private(set) var failed: MediaError?
    var onProgress: (@Sendable (Int) -> Void)?
    var onFailure: (@Sendable (MediaError) -> Void)?

    /// Checks `path` as the reference SDK does; returns the file, or the reference's error code.
    static func open(path: String, encoder: H264Encoder, audioEncoder: AACEncoder?, progressIntervalMs: Int,
                     quality: RecordingQuality? = nil) -> Result<LocalRecording, Int32Error>
    {
        guard RecordingContainer(path: path) != nil else { return .failure(Int32Error(LocalRecordingCode.unsupportedExtension)) }
        if FileManager.default.fileExists(atPath: path) { return .failure(Int32Error(LocalRecordingCode.fileExists)) }
        let directory = (path as NSString).deletingLastPathComponent
        if !FileManager.default.isWritableFile(atPath: directory.isEmpty ? "." : directory) {
            return .failure(Int32Error(LocalRecordingCode.noPermission))
        }
        let ownEncoder: RecordingEncoder?
        do {
            ownEncoder = try quality.map { quality throws(MediaError) in
                try RecordingEncoder(settings: RecordingEncoder.settings(live: encoder.settings, quality: quality))
            }
        } catch {
            return .failure(Int32Error(LocalRecordingCode.internalError))
        }
        do {
            let writer = try RecordingWriter(path: path, encoder: ownEncoder?.encoder ?? encoder,
                                             audioEncoder: audioEncoder)
            let recording = LocalRecording(path: path, writer: writer, ownEncoder: ownEncoder,
                                           progressIntervalMs: progressIntervalMs,
                                           audioRateHz: audioEncoder?.settings.sampleRateHz ?? 48000)
            let fps = Int64(encoder.settings.fps)
            ownEncoder?.deliver = { [unowned recording] packet in recording.record(packet, ptsMs: packet.pts * 1000 / fps) }
            ownEncoder?.onError = { [unowned recording] error in recording.fail(error) }
            return .success(recording)
        } catch {
            // The file could not be created there (no permission, a read-only or special file
            // system, a missing directory): the reference's "no permission" code.
            if case .ffmpeg(let call, _, _) = error, call.hasPrefix("avio_open") {
                return .failure(Int32Error(LocalRecordingCode.noPermission))
            }
            return .failure(Int32Error(LocalRecordingCode.internalError))
        }
    }

    private init(path: String, writer: RecordingWriter, ownEncoder: RecordingEncoder?, progressIntervalMs: Int,
                 audioRateHz: Int) {
        self.path = path
        self.ownEncoder = ownEncoder
        self.audioRateHz = audioRateHz
        self.writer = writer
        self.progressIntervalMs = max(0, progressIntervalMs)
    }

    /// With an encode of its own, the recording needs no live packets.
    var takesLiveVideo: Bool { ownEncoder == nil }

    /// A live packet: recorded unless the recording has an encode of its own.
    func receive(_ packet: EncodedVideoPacket, ptsMs: Int64) {
        if ownEncoder == nil { record(packet, ptsMs: ptsMs) }
    }

    /// The picture the live stream sends now: to the recording's own encoder, if it has one.
    func receivePicture(_ picture: VideoFrame, pts: Int64) {
        ownEncoder?.submit(picture, pts: pts)
    }

    /// Pictures the recording's own encoder had to leave out (it was behind); 0 without one.
    var framesDropped: Int { ownEncoder?.framesDropped ?? 0 }

    /// What a write has to tell, told after the lock is let go (the callbacks are the pusher's).
    private enum News {
        case progress(durationMs: Int)
        case failure(MediaError)
    }

    private func tell(_ news: News?) {
        switch news {
        case .progress(let durationMs)?: onProgress?(durationMs)
        case .failure(let error)?: onFailure?(error)
        case nil: break
        }
    }

    private func fail(_ error: MediaError) {
        let first = lock.withLock { () -> Bool in
            guard failed == nil else { return false }
            failed = error
            return true
        }
        if first { tell(.failure(error)) }
    }

    private func record(_ packet: EncodedVideoPacket, ptsMs: Int64) {
        lock.lock()
        let news = recordLocked(packet, ptsMs: ptsMs)
        lock.unlock()
        tell(news)
    }

    /// Writes a video packet, called with the lock held (the writer is shared by both pipelines' threads).
    private func recordLocked(_ packet: EncodedVideoPacket, ptsMs: Int64) -> News? {
        guard failed == nil else { return nil }
        if startedPtsMs == nil {
            guard packet.isKeyframe else { return nil }  // a recording starts on a keyframe
            startedPtsMs = ptsMs
            writer.timestampOffset = packet.dts
        }
        do throws(MediaError) {
            try writer.write(packet)
        } catch {
            failed = error
            return .failure(error)
        }
        durationMs = Int(ptsMs - (startedPtsMs ?? ptsMs))
        if progressIntervalMs > 0 && durationMs - lastProgressMs >= progressIntervalMs {
            lastProgressMs = durationMs
            return .progress(durationMs: durationMs)
        }
        return nil
    }

    /// Audio joins once the video has started (at its first keyframe), from that instant on.
    func receiveAudio(_ packet: EncodedAudioPacket, ptsMs: Int64) {
        let news = lock.withLock { () -> News? in
            guard failed == nil, let startedPtsMs, ptsMs >= startedPtsMs else { return nil }
            if !audioStarted {
                audioStarted = true
                let rate = Int64(audioRateHz)
                writer.audioTimestampOffset = packet.pts - (ptsMs - startedPtsMs) * rate / 1000
            }
            do throws(MediaError) {
                try writer.write(packet)
            } catch {
                failed = error
                return .failure(error)
            }
            return nil
        }
        tell(news)
    }

    var bytesWritten: Int64 {
        lock.lock()
        defer { lock.unlock() }
        return writer.bytesWritten
    }

    /// How a recording ended.
    enum Ending {
        case complete
        /// Stopped before the first keyframe: nothing was recorded, and the empty file is removed.
        case nothingRecorded
        case failed(MediaError)
    }

    /// Closes the file (after the recording's own encoder, if any, has written what it holds).
    func finish() -> Ending {
        ownEncoder?.finish()
        lock.lock()
        defer { lock.unlock() }
        if let failed { return .failed(failed) }
        do throws(MediaError) {
            try writer.finish()
        } catch {
            return .failed(error)
        }
        guard startedPtsMs != nil else {
            try? FileManager.default.removeItem(atPath: path)
            return .nothingRecorded
        }
        return .complete
    }
}

/// An Int32 code as an Error (for `Result`).
struct Int32Error: Error {
    let code: Int32
    init(_ code: Int32) { self.code = code }
}
