import Foundation
import Media

extension LivePusher {
    // MARK: Local recording

    /// Starts recording to `path` (.mp4 fragmented, .mkv or .flv). Returns 0, or the reference
    /// SDK's code: -1 internal error (also: screen capture not started), -2 unsupported
    /// extension, -6 already recording, -7 the file exists, -8 no permission. The same code
    /// arrives in `onLocalRecordBegin`. `onLocalRecording` reports the duration every
    /// `progressIntervalMs` of recorded media; 0 (the default, as in the reference) turns it off.
    /// With `overwrite`, an existing regular file at `path` is replaced instead of refused (-7).
    /// With `split`, the recording goes on in a new file after that duration or size, at the next
    /// keyframe: the files are `path` numbered (`talk.mkv` → `talk-001.mkv`, `talk-002.mkv`...,
    /// `RecordingSplit.numberedPath`), `onLocalRecordBegin` names the first, and
    /// `onLocalRecordSplit` tells each file finished and the next begun.
    @discardableResult
    public func startLocalRecording(path: String, progressIntervalMs: Int = 0, overwrite: Bool = false,
                                    split: RecordingSplit? = nil) -> Int32 {
        let filePath = split == nil ? path : RecordingSplit.numberedPath(path, number: 1)
        let code = inTurn {
            startLocalRecordingLocked(path: path, progressIntervalMs: progressIntervalMs, overwrite: overwrite, split: split)
        }
        notify { $0.onLocalRecordBegin(code: code, storagePath: filePath) }
        return code
    }

    /// `startLocalRecording`, in turn (`inTurn`): the file is opened with `state` free.
    private func startLocalRecordingLocked(path: String, progressIntervalMs: Int, overwrite: Bool,
                                           split: RecordingSplit?) -> Int32 {
        let (recording, pipeline, audioPipeline) = state.withLock { ($0.recording, $0.pipeline, $0.audioPipeline) }
        let code: Int32
        if recording != nil {
            code = LocalRecordingCode.alreadyRecording
        } else if let pipeline {
            // A track per source when the audio pipeline encodes them (`recordTracks`) and the
            // container holds several (not FLV: there the mix alone).
            let tracks = audioPipeline?.hasSourceTracks == true && RecordingContainer(path: path) != .flv
                ? SourceTracks.titles : []
            switch LocalRecording.open(path: path, encoder: pipeline.videoEncoder, audioEncoder: audioPipeline?.encoder,
                                       progressIntervalMs: progressIntervalMs, quality: config.recordingQuality,
                                       overwrite: overwrite, split: split, sourceTrackTitles: tracks) {
            case .success(let recording):
                recording.onProgress = { [weak self, weak recording] durationMs in
                    guard let path = recording?.path else { return }
                    self?.notify { $0.onLocalRecording(durationMs: durationMs, storagePath: path) }
                }
                recording.onFailure = { [weak self, weak recording] error in
                    let path = recording?.path ?? path
                    self?.notify { $0.onError(code: LocalRecordingCode.internalError,
                                              message: "recording failed: \(error)", extraInfo: ["path": path]) }
                }
                observeSplits(of: recording)
                state.withLock { $0.recording = recording }
                pipeline.add(recording)
                audioPipeline?.add(recording)
                // Started mid-broadcast (`ctl record start`): from the next picture, not a GOP later.
                if recording.takesLiveVideo { _ = requestKeyframe() }
                code = LocalRecordingCode.ok
            case .failure(let error):
                code = error.code
            }
        } else {
            code = LocalRecordingCode.internalError
        }
        return code
    }

    /// Pauses the recording: what the broadcast sends meanwhile is left out of the file, and the
    /// broadcast goes on. 0, or -1 when nothing is being recorded or it is already paused.
    @discardableResult
    public func pauseLocalRecording() -> Int32 {
        guard let recording = state.withLock({ $0.recording }), recording.pause() else { return LocalRecordingCode.internalError }
        notify { $0.onLocalRecordPaused(storagePath: recording.path) }
        return LocalRecordingCode.ok
    }

    /// Resumes a paused recording at the next keyframe (one is asked for at once), placed right
    /// after what was recorded before the pause: the file has no gap in its timestamps. 0, or -1
    /// when nothing is being recorded or it is not paused.
    @discardableResult
    public func resumeLocalRecording() -> Int32 {
        guard let recording = state.withLock({ $0.recording }), recording.resume() else { return LocalRecordingCode.internalError }
        if recording.takesLiveVideo { _ = requestKeyframe() }
        notify { $0.onLocalRecordResumed(storagePath: recording.path) }
        return LocalRecordingCode.ok
    }

    /// Goes on recording in a new file from the next keyframe (one is asked for at once): the file
    /// so far is finished and `onLocalRecordSplit` names it and the next (`talk.mkv` → `talk-002.mkv`,
    /// or the next number of a recording started with a split). The two play back to back: no
    /// picture missing or twice, the sound cut within one AAC frame. A paused recording splits
    /// where it resumes. 0, or -1 when nothing is being recorded or nothing has been recorded yet.
    @discardableResult
    public func splitLocalRecording() -> Int32 {
        guard let recording = state.withLock({ $0.recording }), recording.split() else { return LocalRecordingCode.internalError }
        if recording.takesLiveVideo { _ = requestKeyframe() }
        return LocalRecordingCode.ok
    }

    /// Tells the observer of each split, and asks the live encoder for the keyframe a split waits for.
    private func observeSplits(of recording: LocalRecording) {
        recording.onSplit = { [weak self] finished, next in
            self?.notify { $0.onLocalRecordSplit(previousPath: finished.path, durationMs: finished.durationMs,
                                                 sizeBytes: finished.sizeBytes, nextPath: next) }
        }
        recording.onSplitFailed = { [weak self] path, error in
            self?.notify { $0.onWarning(code: LivePushWarningCode.recordSplitFailed,
                                        message: "cannot start the recording's next file '\(path)': \(error); "
                                            + "it goes on in the current one", extraInfo: ["path": path]) }
        }
        recording.onKeyframeNeeded = { [weak self] in _ = self?.requestKeyframe() }
    }

    /// Finishes the recording, if any: its file is complete when `onLocalRecordComplete` says 0;
    /// -3 when it stopped before the first picture (nothing recorded: the empty file is removed),
    /// -1 when writing failed.
    public func stopLocalRecording() {
        inTurn { stopLocalRecordingLocked() }
    }

    /// `stopLocalRecording`, in turn (`inTurn`); `finish` (the file's end) with `state` free.
    func stopLocalRecordingLocked() {
        let (recording, pipeline, audioPipeline) = state.withLock { state in
            defer { state.recording = nil }
            return (state.recording, state.pipeline, state.audioPipeline)
        }
        guard let recording else { return }
        pipeline?.remove(recording)
        audioPipeline?.remove(recording)
        let code = switch recording.finish() {
        case .complete: LocalRecordingCode.ok
        case .nothingRecorded: LocalRecordingCode.nothingRecorded
        case .failed: LocalRecordingCode.internalError
        }
        if recording.framesDropped > 0 { warnDropped(recording) }
        notify { $0.onLocalRecordComplete(code: code, storagePath: recording.path) }
    }
}
