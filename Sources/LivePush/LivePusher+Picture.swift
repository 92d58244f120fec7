import Foundation

extension LivePusher {
    // MARK: SEI messages

    /// Inserts `text` into the video as an H.264 SEI `user_data_unregistered` message (the
    /// payload: `LivePushSEI.uuid`, then the text in UTF-8), in `repeatCount` consecutive frames
    /// (with `keyFrameOnly`, in the next `repeatCount` keyframes) once `delayMs` has passed. It
    /// reaches every destination and the local recording, in the same access units. As in the
    /// reference SDK, a player deduplicates the repeats. 0, or -1 when screen capture is not
    /// started, or -2 for an empty or too long text (over `LivePushSEI.maxTextBytes`), a repeat
    /// count outside 1...1000 or a delay outside 0...600000 ms (`LivePushSEI.problem` says which).
    @discardableResult
    public func sendMessage(_ text: String, repeatCount: Int, delayMs: Int, keyFrameOnly: Bool) -> Int32 {
        guard LivePushSEI.problem(text: text, repeatCount: repeatCount, delayMs: delayMs) == nil else {
            return LivePushErrorCode.invalidParameter
        }
        guard let pipeline = lock.withLock({ pipeline }) else { return -1 }
        pipeline.sei.add(text: text, repeatCount: repeatCount, delayMs: delayMs, keyFrameOnly: keyFrameOnly)
        return 0
    }
}

extension LivePusher {
    // MARK: External video

    /// Starts the pipelines without a capture helper: the pictures come from `sendVideoFrame`
    /// (black until the first), the audio as with `startScreenCapture` (the microphone,
    /// `sendPCM`, music). Push, record and stop as usual (`stopScreenCapture` ends it).
    public func startExternalVideo(audio: Bool = true) throws(LivePushError) {
        try startCapture(group: nil, runtimeDirectory: nil, audio: audio)
    }

    /// One picture the application rendered itself (I420, NV12 or BGRA, with its strides and
    /// CLOCK_MONOTONIC time): copied at once, then converted, scaled to the output size, composed
    /// and encoded at the next tick of the output frame rate like a helper's frame (the newest
    /// one wins; a still picture is repeated). Works after `startExternalVideo` or beside a
    /// helper (`startScreenCapture`: a new external picture is taken before the helper's).
    /// 0; -1 when no capture is started; -2 for a frame that cannot be used
    /// (`ExternalVideoFrame.problem` says why) or whose `ptsNs` is not after the last one's.
    @discardableResult
    public func sendVideoFrame(_ frame: ExternalVideoFrame) -> Int32 {
        guard frame.problem == nil else { return LivePushErrorCode.invalidParameter }
        guard let pipeline = lock.withLock({ pipeline }) else { return -1 }
        guard pipeline.external.submit(frame) else { return LivePushErrorCode.invalidParameter }
        pipeline.frameArrived()
        return 0
    }
}
