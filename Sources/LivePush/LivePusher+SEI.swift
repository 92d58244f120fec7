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
        guard let pipeline = pipeline else { return -1 }
        pipeline.sei.add(text: text, repeatCount: repeatCount, delayMs: delayMs, keyFrameOnly: keyFrameOnly)
        return 0
    }
}
