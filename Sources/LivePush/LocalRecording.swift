import Foundation
import Media

/// A recording of the encoded stream into a file: starts at a keyframe, reports progress, and
/// closes the file cleanly (fragmented MP4 stays playable even if the process is killed). With a
/// quality of its own (`RecordingQuality`), its video is a second encode of the same pictures
/// (`RecordingEncoder`) and the live packets are left aside; audio is the live AAC either way.
///
/// Threads: the video pipeline's encode thread (or the own encoder's) calls `receive`/`record`, the
/// audio pipeline's thread `receiveAudio`, the pusher's turn `pause`/`resume`/`split`/`finish`;
/// `lock` guards every `var` below, the writer and the split's state (`LocalRecording+Split.swift`).
final class LocalRecording: EncodedMediaSink, PictureSink, @unchecked Sendable {
    /// A mix packet waiting to be written, its stream time, and its source tracks' packets (`SourceTracks`).
    typealias PendingAudio = (packet: EncodedAudioPacket, ptsMs: Int64, tracks: [EncodedAudioPacket])
    /// The file being written now (the next one after a split).
    var path: String { lock.withLock { currentPath } }
    /// The path given: a split recording's files are named from it.
    let givenPath: String
    var currentPath: String
    var writer: RecordingWriter
    /// Opens the next file of a split recording, for the same encoders.
    let makeWriter: (String) throws(MediaError) -> RecordingWriter
    let overwrite: Bool
    let ownEncoder: RecordingEncoder?
    private let progressIntervalMs: Int
    let lock = NSLock()
    var startedPtsMs: Int64?
    var audioStarted = false
    private let audioRateHz: Int
    /// How long a picture lasts (1000 / fps).
    let videoFrameMs: Int64
    var lastProgressMs = 0
    var durationMs = 0
    /// Paused (`pause()`): packets are left out until `resume()`, and then until the next keyframe.
    var paused = false
    var resumePending = false
    /// The stream time of the last picture written before the pause: sound up to it is still
    /// written when it comes after the pause was asked for (it is encoded later than the picture).
    var pausedAtPtsMs: Int64?
    /// Stream time (ms) left out of the file by pauses: a picture at `ptsMs` is in the file at
    /// `ptsMs - startedPtsMs - pausedMs`, so the file has no gap where it was paused.
    var pausedMs: Int64 = 0
    /// The last picture written: its stream time, and its decoding time in the file (encoder ticks).
    var lastVideoPtsMs: Int64 = 0
    var lastVideoFileDts: Int64 = 0
    /// Audio resumes at the first packet at or after the resumed video's first picture.
    var audioResumePtsMs: Int64?
    /// Sound that came while the file waited for its first picture (at the start or a resume):
    /// the sound is encoded sooner than a picture of the same instant, so what follows that picture
    /// is often here before it. Written once the picture is, from its instant on; at most
    /// `maxPendingAudio` packets (about 5 s), the oldest dropped first.
    var pendingAudio: [PendingAudio] = []
    static let maxPendingAudio = 256
    /// Where the last audio packet written ends in the file (samples).
    var audioFileEnd: Int64 = 0
    /// When and where the next file starts (`LocalRecording+Split.swift`).
    var splitter: RecordingSplitter
    var failed: MediaError?
    /// `finish()` began: the last pictures go into the file being written (no split any more).
    var isEnding = false
    var onProgress: (@Sendable (Int) -> Void)?
    var onFailure: (@Sendable (MediaError) -> Void)?
    /// A file was finished and the next one begun (a split), told after the lock is let go.
    var onSplit: (@Sendable (RecordingSplitter.Finished, String) -> Void)?
    /// The next file of a split could not be opened: the recording goes on in the file it was in.
    var onSplitFailed: (@Sendable (String, MediaError) -> Void)?
    /// The live encoder should make a keyframe soon (a split is due and the recording takes live packets).
    var onKeyframeNeeded: (@Sendable () -> Void)?

    /// Why a new file cannot be written at `path`, as the reference SDK's code (-2 extension, -7
    /// exists, -8 no permission), or nil. With `overwrite`, a regular file there is removed first
    /// (anything else there is still "exists"). The replay buffer's saves check their files so too.
    static func pathProblem(_ path: String, overwrite: Bool) -> Int32? {
        guard RecordingContainer(path: path) != nil else { return LocalRecordingCode.unsupportedExtension }
        var existing = stat()
        if lstat(path, &existing) == 0 {
            guard overwrite, existing.st_mode & S_IFMT == S_IFREG, unlink(path) == 0 else { return LocalRecordingCode.fileExists }
        }
        let directory = (path as NSString).deletingLastPathComponent
        guard FileManager.default.isWritableFile(atPath: directory.isEmpty ? "." : directory) else {
            return LocalRecordingCode.noPermission
        }
        return nil
    }

    /// Checks `path` as the reference SDK does; returns the file, or the reference's error code.
    /// With `overwrite`, a regular file at `path` is removed first (anything else there is still "exists").
    /// With `split`, the files are numbered from 1 (`RecordingSplit.numberedPath`) and `path` is only their pattern.
    /// `sourceTrackTitles`: a track per source beside the mix (`SourceTracks`), for MKV and MP4.
    static func open(path givenPath: String, encoder: H264Encoder, audioEncoder: AACEncoder?, progressIntervalMs: Int,
                     quality: RecordingQuality? = nil, overwrite: Bool = false,
                     split: RecordingSplit? = nil, sourceTrackTitles: [String] = []) -> Result<LocalRecording, Int32Error>
    {
        let path = split == nil ? givenPath : RecordingSplit.numberedPath(givenPath, number: 1)
        if let problem = pathProblem(path, overwrite: overwrite) { return .failure(Int32Error(problem)) }
        let ownEncoder: RecordingEncoder?
        do {
            ownEncoder = try quality.map { quality throws(MediaError) in
                try RecordingEncoder(settings: RecordingEncoder.settings(live: encoder.settings, quality: quality))
            }
        } catch {
            return .failure(Int32Error(LocalRecordingCode.internalError))
        }
        do {
            let makeWriter = { (path: String) throws(MediaError) -> RecordingWriter in
                try RecordingWriter(path: path, encoder: ownEncoder?.encoder ?? encoder, audioEncoder: audioEncoder,
                                    mixTitle: SourceTracks.mixTitle, sourceTrackTitles: sourceTrackTitles)
            }
            let writer = try makeWriter(path)
            let recording = LocalRecording(givenPath: givenPath, path: path, writer: writer, makeWriter: makeWriter,
                                           overwrite: overwrite, split: split, ownEncoder: ownEncoder,
                                           progressIntervalMs: progressIntervalMs,
                                           audioRateHz: audioEncoder?.settings.sampleRateHz ?? 48000,
                                           videoFrameMs: Int64(1000 / max(1, encoder.settings.fps)))
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

    private init(givenPath: String, path: String, writer: RecordingWriter,
                 makeWriter: @escaping (String) throws(MediaError) -> RecordingWriter, overwrite: Bool,
                 split: RecordingSplit?, ownEncoder: RecordingEncoder?, progressIntervalMs: Int,
                 audioRateHz: Int, videoFrameMs: Int64) {
        self.givenPath = givenPath
        self.currentPath = path
        self.makeWriter = makeWriter
        self.overwrite = overwrite
        self.splitter = RecordingSplitter(plan: split)
        self.videoFrameMs = videoFrameMs
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
        guard let ownEncoder, !isPaused else { return }  // paused: nothing to encode
        ownEncoder.submit(picture, pts: pts)
    }

    /// Pictures the recording's own encoder had to leave out (it was behind); 0 without one.
    var framesDropped: Int { ownEncoder?.framesDropped ?? 0 }

    /// What a write has to tell, told after the lock is let go (the callbacks are the pusher's).
    enum News {
        case progress(durationMs: Int)
        case failure(MediaError)
        case split(RecordingSplitter.Finished, next: String)
        case splitFailed(path: String, MediaError)
        case keyframeNeeded
    }

    func tell(_ news: News?) {
        switch news {
        case .progress(let durationMs)?: onProgress?(durationMs)
        case .failure(let error)?: onFailure?(error)
        case .split(let finished, let next)?: onSplit?(finished, next)
        case .splitFailed(let path, let error)?: onSplitFailed?(path, error)
        case .keyframeNeeded?: onKeyframeNeeded?()
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
        let splitNews = splitBeforeVideoLocked(packet, ptsMs: ptsMs)
        let news = recordLocked(packet, ptsMs: ptsMs)
        lock.unlock()
        splitNews.forEach(tell)
        tell(news)
    }

    /// Writes a video packet, called with the lock held (the writer is shared by both pipelines' threads).
    private func recordLocked(_ packet: EncodedVideoPacket, ptsMs: Int64) -> News? {
        guard failed == nil, !paused else { return nil }
        if startedPtsMs == nil {
            guard packet.isKeyframe else { return nil }  // a recording starts on a keyframe
            startedPtsMs = ptsMs
            writer.timestampOffset = packet.dts
        } else if resumePending {
            guard packet.isKeyframe else { return nil }  // and goes on after a pause on one
            resumePending = false
            // Right after the last picture written: one tick later in the file, and the stream
            // time between them (less that tick) left out.
            let frameMs = max(1, (ptsMs - lastVideoPtsMs) / max(1, packet.dts - (lastVideoFileDts + writer.timestampOffset)))
            pausedMs += max(0, ptsMs - lastVideoPtsMs - frameMs)
            writer.timestampOffset = packet.dts - (lastVideoFileDts + 1)
            audioResumePtsMs = ptsMs
        }
        do throws(MediaError) {
            try writer.write(packet)
        } catch {
            failed = error
            return .failure(error)
        }
        lastVideoPtsMs = ptsMs
        lastVideoFileDts = packet.dts - writer.timestampOffset
        durationMs = Int(ptsMs - (startedPtsMs ?? ptsMs) - pausedMs)
        if !pendingAudio.isEmpty {
            let waiting = pendingAudio
            pendingAudio.removeAll()
            for (audio, audioPtsMs, tracks) in waiting {
                if let news = writeAudioLocked(audio, ptsMs: audioPtsMs, tracks: tracks) { return news }
            }
        }
        if progressIntervalMs > 0 && durationMs - lastProgressMs >= progressIntervalMs {
            lastProgressMs = durationMs
            return .progress(durationMs: durationMs)
        }
        return nil
    }

    /// Audio joins once the video has started (at its first keyframe), from that instant on.
    func receiveAudio(_ packet: EncodedAudioPacket, ptsMs: Int64) {
        receiveAudio(packet, ptsMs: ptsMs, sourceTracks: [])
    }

    /// A mix packet and, with `--record-tracks`, each source track's packet of the same instant:
    /// the tracks go wherever the mix goes (written beside it, held with it, left out with it).
    func receiveAudio(_ packet: EncodedAudioPacket, ptsMs: Int64, sourceTracks tracks: [EncodedAudioPacket]) {
        var splitNews: News?
        let news = lock.withLock { () -> News? in
            guard failed == nil else { return nil }
            // Sound of the file before a split, late as sound is: to that file.
            let toClosingFile: Bool
            (toClosingFile, splitNews) = closingFileTakesLocked(packet, ptsMs: ptsMs, tracks: tracks)
            if toClosingFile { return nil }
            if paused {
                // The sound of the pictures written before the pause (to the end of the last one), late as sound is.
                guard let pausedAtPtsMs, ptsMs < pausedAtPtsMs + videoFrameMs else { return nil }
                return writeAudioLocked(packet, ptsMs: ptsMs, tracks: tracks)
            }
            if startedPtsMs != nil && !resumePending && holdsForSplitLocked(ptsMs: ptsMs) {
                holdForSplitLocked(packet, ptsMs: ptsMs, tracks: tracks)
                return nil
            }
            if startedPtsMs == nil || resumePending {
                if pendingAudio.count >= Self.maxPendingAudio { pendingAudio.removeFirst() }
                pendingAudio.append((packet, ptsMs, tracks))
                return nil
            }
            return writeAudioLocked(packet, ptsMs: ptsMs, tracks: tracks)
        }
        tell(splitNews)
        tell(news)
    }

    /// Writes an audio packet at its place beside the pictures, with the lock held.
    func writeAudioLocked(_ packet: EncodedAudioPacket, ptsMs: Int64, tracks: [EncodedAudioPacket]) -> News? {
        guard let startedPtsMs, ptsMs >= startedPtsMs else { return nil }
        let rate = Int64(audioRateHz)
        if !audioStarted {
            audioStarted = true
            writer.audioTimestampOffset = packet.pts - (ptsMs - startedPtsMs) * rate / 1000
        } else if let resumedAtMs = audioResumePtsMs {
            guard ptsMs >= resumedAtMs else { return nil }
            audioResumePtsMs = nil
            // At its place beside the resumed picture, never over what was written before, and
            // right after it when that is less than a packet away (no gap in the sound, for a
            // shift of at most one packet, 21 ms).
            let placed = (ptsMs - startedPtsMs - pausedMs) * rate / 1000
            let fileStart = placed - audioFileEnd < Int64(packet.durationSamples) ? audioFileEnd : placed
            writer.audioTimestampOffset = packet.pts - fileStart
        }
        do throws(MediaError) {
            try writer.write(packet)
            for (index, track) in tracks.enumerated() { try writer.write(track, track: index) }
        } catch {
            failed = error
            return .failure(error)
        }
        audioFileEnd = packet.pts - writer.audioTimestampOffset + Int64(packet.durationSamples)
        return nil
    }

    /// Leaves what follows out of the file until `resume()`. False when already paused.
    func pause() -> Bool {
        lock.withLock {
            guard !paused else { return false }
            paused = true
            // Paused again before the resumed file's first picture: the pause before still holds.
            if !resumePending { pausedAtPtsMs = startedPtsMs == nil ? nil : lastVideoPtsMs }
            resumePending = false
            pendingAudio.removeAll()
            writeHeldAudioLocked(before: pausedAtPtsMs.map { $0 + videoFrameMs } ?? 0)
            return true
        }
    }

    /// Records again from the next keyframe (the caller asks the encoder for one), placed right
    /// after what was recorded before the pause. False when not paused.
    func resume() -> Bool {
        lock.withLock {
            guard paused else { return false }
            paused = false
            // Not started yet (paused before the first keyframe): it simply starts at the next one.
            resumePending = startedPtsMs != nil
            ownEncoder?.requestKeyframe()
            return true
        }
    }

    var isPaused: Bool { lock.withLock { paused } }

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
        lock.withLock { isEnding = true }
        ownEncoder?.finish()
        lock.lock()
        // The file before a split, still waiting for its last sound: complete now.
        let splitNews = finishClosingFileLocked()
        let ending = finishLocked()
        lock.unlock()
        tell(splitNews)
        return ending
    }

    private func finishLocked() -> Ending {
        if let failed { return .failed(failed) }
        // The sound held for a split that did not come: it belongs to this file.
        writeHeldAudioLocked(before: Int64.max)
        do throws(MediaError) {
            try writer.finish()
        } catch {
            return .failed(error)
        }
        guard startedPtsMs != nil else {
            try? FileManager.default.removeItem(atPath: currentPath)
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
