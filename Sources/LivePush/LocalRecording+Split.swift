import Foundation
import Media

/// When a recording's next file starts (issue 34: `--record-split`, `ctl record split`), and the
/// sound held meanwhile. Owned by `LocalRecording`: every field is read and written with its
/// `lock` held (by the video thread that writes pictures, the audio thread that writes sound, and
/// the pusher's turn that asks for a split).
///
/// The join: a split is due at a point in stream time (a duration's end, the moment it was asked
/// for, or the picture that filled the size); the next file starts at the first keyframe at or
/// after it (one is asked for: of the recording's own encoder, or the live one through
/// `onKeyframeNeeded`). Sound is encoded sooner than the picture of the same instant, so from the
/// split point on it is held here instead of written; when the keyframe comes, what is before its
/// instant ends the old file, and the rest begins the new one, placed beside the keyframe as at a
/// recording's start. Sound may also come later than its picture (a small picture encodes fast, the
/// mixer works in 20 ms frames): the old file stays open (`closing`) until sound at or past the
/// keyframe's instant arrives (or `closingWaitMs` of pictures later, or the recording's end), and sound before
/// that instant still goes to it; it is reported complete (`onSplit`) only then. Each file thus plays on from where the one before stopped: no picture twice
/// or missing, and the sound cut within one AAC frame (21 ms) of the picture.
struct RecordingSplitter {
    /// A file finished by a split: its name, its length (to the next file's first picture) and size.
    struct Finished: Sendable {
        let path: String
        let durationMs: Int
        let sizeBytes: Int64
    }

    let plan: RecordingSplit?
    /// The number of the file being written: 1 for the first (named as given without a plan).
    var fileNumber = 1
    /// The plan's point in the current file: recorded time (ms) or bytes. Grows by the plan's step
    /// when the next file could not be opened, so that it is tried again a step later, not at every picture.
    var dueAmount: Int64
    /// Set by a split on command (or a size reached): the stream time (ms) from which a keyframe starts the next file.
    var armedAtPtsMs: Int64?
    var keyframeAsked = false
    /// The bytes of the packets the current file got: the file's size as the muxer has not yet
    /// written it (an MP4 fragment or an MKV cluster reaches the disk a GOP at a time).
    var payloadBytes: Int64 = 0
    /// Sound at or after the split point, until the keyframe says which file it belongs to.
    var heldAudio: [LocalRecording.PendingAudio] = []
    /// The file before the last split, open for its late sound: what ends before `endPtsMs`.
    var closing: ClosingFile?

    struct ClosingFile {
        let writer: RecordingWriter
        let path: String
        let endPtsMs: Int64
        let durationMs: Int
        let nextPath: String
    }

    init(plan: RecordingSplit?) {
        self.plan = plan
        dueAmount = plan?.step ?? 0
    }
}

extension RecordingSplit {
    /// A file's length in ms or its size in bytes.
    var step: Int64 {
        switch self {
        case .durationMs(let ms): Int64(ms)
        case .sizeBytes(let bytes): bytes
        }
    }
}

extension LocalRecording {
    /// How long (in pictures' time) the file before a split waits for its late sound: under load
    /// the sound lags the pictures by much more than its usual 100 ms.
    static let closingWaitMs: Int64 = 5000

    /// Asks for the next file at the next keyframe (the caller asks the live encoder for one when
    /// the recording takes live packets). False before the first picture (nothing to split) or after a failure.
    func split() -> Bool {
        lock.withLock {
            guard failed == nil, startedPtsMs != nil else { return false }
            if splitter.armedAtPtsMs == nil { splitter.armedAtPtsMs = lastVideoPtsMs + 1 }
            splitter.keyframeAsked = true
            ownEncoder?.requestKeyframe()
            return true
        }
    }

    /// Where the next file is due in stream time (ms), or nil when none is.
    private var splitPointPtsMs: Int64? {
        if let armed = splitter.armedAtPtsMs { return armed }
        guard case .durationMs? = splitter.plan, let startedPtsMs, !resumePending else { return nil }
        return startedPtsMs + pausedMs + splitter.dueAmount
    }

    /// Whether sound at `ptsMs` waits for the split's keyframe (lock held).
    func holdsForSplitLocked(ptsMs: Int64) -> Bool {
        splitPointPtsMs.map { ptsMs >= $0 } ?? false
    }

    /// Holds sound past the split point; when too much waits (no keyframe for 5 s), the oldest goes to the current file.
    func holdForSplitLocked(_ packet: EncodedAudioPacket, ptsMs: Int64, tracks: [EncodedAudioPacket]) {
        if splitter.heldAudio.count >= Self.maxPendingAudio {
            let oldest = splitter.heldAudio.removeFirst()
            _ = writeAudioLocked(oldest.packet, ptsMs: oldest.ptsMs, tracks: oldest.tracks)
        }
        splitter.heldAudio.append((packet, ptsMs, tracks))
    }

    /// Writes the held sound before `ptsMs` to the current file; returns the rest (and holds nothing more).
    @discardableResult
    func writeHeldAudioLocked(before ptsMs: Int64) -> [LocalRecording.PendingAudio] {
        let held = splitter.heldAudio
        splitter.heldAudio.removeAll()
        for (packet, audioPtsMs, tracks) in held where audioPtsMs < ptsMs {
            _ = writeAudioLocked(packet, ptsMs: audioPtsMs, tracks: tracks)
        }
        return held.filter { $0.ptsMs >= ptsMs }
    }

    /// Before a picture is written (lock held): arms a size split, asks for a keyframe when a split
    /// is due, and at the keyframe starts the next file (the picture is then that file's first).
    func splitBeforeVideoLocked(_ packet: EncodedVideoPacket, ptsMs: Int64) -> [News] {
        // The file before a split waited long enough for its sound.
        var news: [News] = []
        if let closing = splitter.closing, ptsMs >= closing.endPtsMs + Self.closingWaitMs, let closed = finishClosingFileLocked() {
            news.append(closed)
        }
        return news + [splitStepLocked(packet, ptsMs: ptsMs)].compactMap { $0 }
    }

    private func splitStepLocked(_ packet: EncodedVideoPacket, ptsMs: Int64) -> News? {
        // Ending: the recording's own encoder hands over its last pictures; no new file for them
        // (it would hold a picture or two and none of their sound, which has stopped coming).
        guard failed == nil, !paused, !isEnding, startedPtsMs != nil else { return nil }
        splitter.payloadBytes += Int64(packet.payload.count)
        if case .sizeBytes? = splitter.plan, splitter.armedAtPtsMs == nil, !resumePending,
           max(writer.bytesWritten, splitter.payloadBytes) >= splitter.dueAmount {
            splitter.armedAtPtsMs = ptsMs
        }
        guard let point = splitPointPtsMs, ptsMs >= point else { return nil }
        if packet.isKeyframe { return startNextFileLocked(at: ptsMs) }
        guard !splitter.keyframeAsked else { return nil }
        splitter.keyframeAsked = true
        if let ownEncoder {
            ownEncoder.requestKeyframe()
            return nil
        }
        return .keyframeNeeded
    }

    /// The next free name: a file that exists is replaced with `overwrite` (a regular file), else skipped.
    private func nextPathLocked() -> (path: String, number: Int)? {
        for number in (splitter.fileNumber + 1)...(splitter.fileNumber + 1000) {
            let path = RecordingSplit.numberedPath(givenPath, number: number)
            var existing = stat()
            if lstat(path, &existing) != 0 { return (path, number) }
            if overwrite, existing.st_mode & S_IFMT == S_IFREG, unlink(path) == 0 { return (path, number) }
        }
        return nil
    }

    /// Finishes the current file at the keyframe at `ptsMs` and opens the next; the keyframe is
    /// then written by `recordLocked` as the new file's first picture (its start is reset here).
    private func startNextFileLocked(at ptsMs: Int64) -> News? {
        let newWriter: RecordingWriter
        let next: (path: String, number: Int)
        do throws(MediaError) {
            guard let free = nextPathLocked() else {
                throw MediaError.ffmpeg(call: "open", code: -EEXIST,
                                        message: "the next 1000 numbered names exist (give --overwrite to replace them)")
            }
            next = free
            newWriter = try makeWriter(free.path)
        } catch {
            // Goes on in this file; the plan tries again one step later.
            writeHeldAudioLocked(before: Int64.max)
            splitter.armedAtPtsMs = nil
            splitter.keyframeAsked = false
            splitter.dueAmount += splitter.plan?.step ?? 0
            return .splitFailed(path: RecordingSplit.numberedPath(givenPath, number: splitter.fileNumber + 1), error)
        }
        let nextAudio = writeHeldAudioLocked(before: ptsMs) + pendingAudio.filter { $0.ptsMs >= ptsMs }
        // A split again before the file of the last one got its sound: that one is complete now.
        let earlier = finishClosingFileLocked()
        // Split where a pause ends: the old file ends where it was paused (its sound too).
        let endPtsMs = resumePending ? (pausedAtPtsMs ?? lastVideoPtsMs) + videoFrameMs : ptsMs
        splitter.closing = RecordingSplitter.ClosingFile(
            writer: writer, path: currentPath, endPtsMs: endPtsMs,
            durationMs: Int(endPtsMs - (startedPtsMs ?? endPtsMs) - pausedMs), nextPath: next.path)
        let hadAudio = audioStarted
        writer = newWriter
        currentPath = next.path
        splitter.fileNumber = next.number
        splitter.armedAtPtsMs = nil
        splitter.keyframeAsked = false
        splitter.dueAmount = splitter.plan?.step ?? 0
        splitter.payloadBytes = 0
        // The new file starts as a recording does: at this keyframe, its sound from this instant on.
        startedPtsMs = nil
        audioStarted = false
        pendingAudio = nextAudio
        resumePending = false
        pausedMs = 0
        pausedAtPtsMs = nil
        audioResumePtsMs = nil
        audioFileEnd = 0
        lastProgressMs = 0
        durationMs = 0
        // Without sound (none yet, or no audio track) nothing is late: complete at once.
        return hadAudio ? earlier : finishClosingFileLocked() ?? earlier
    }

    /// Sound for the file before a split (before its end), written there: (true, news); else (false,
    /// and the news of that file completed when this sound is past its end). Counts the sound's bytes.
    func closingFileTakesLocked(_ packet: EncodedAudioPacket, ptsMs: Int64, tracks: [EncodedAudioPacket]) -> (Bool, News?) {
        if startedPtsMs != nil && !paused { splitter.payloadBytes += Int64(packet.payload.count) }
        guard let closing = splitter.closing else { return (false, nil) }
        guard ptsMs < closing.endPtsMs else { return (false, finishClosingFileLocked()) }
        do throws(MediaError) {
            try closing.writer.write(packet)
            for (index, track) in tracks.enumerated() { try closing.writer.write(track, track: index) }
        } catch {
            failed = error
            return (true, .failure(error))
        }
        return (true, nil)
    }

    /// Completes the file before a split, if one waits: the news that it is.
    func finishClosingFileLocked() -> News? {
        guard let closing = splitter.closing else { return nil }
        splitter.closing = nil
        do throws(MediaError) {
            try closing.writer.finish()
        } catch {
            failed = error
            return .failure(error)
        }
        let finished = RecordingSplitter.Finished(path: closing.path, durationMs: closing.durationMs,
                                                  sizeBytes: closing.writer.bytesWritten)
        return .split(finished, next: closing.nextPath)
    }
}
