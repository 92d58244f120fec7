import Foundation

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
        guard let pipeline = pipeline else { return -1 }
        guard pipeline.external.submit(frame) else { return LivePushErrorCode.invalidParameter }
        pipeline.frameArrived()
        return 0
    }
}
