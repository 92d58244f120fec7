import CaptureLink
import Foundation
import LinuxSystem

extension LivePusher {
    // MARK: A keyframe on request

    /// Makes the next encoded picture a keyframe (an IDR), for a viewer who has just joined: a
    /// server that starts a joiner's video at a keyframe (nginx-rtmp) then starts it at once
    /// instead of up to a GOP later. Wire it to the server's play hook (nginx-rtmp's `exec_play`
    /// running `livepush ctl ... keyframe`, docs/guide.md). At most one keyframe is forced per
    /// `KeyframeRequests.minIntervalMs` (1000 ms): a request within it gets the one forced when it
    /// is over; none is forced when a keyframe went out in the last `KeyframeRequests.recentKeyframeMs`
    /// (40 ms: after the viewer joined). The result says which. With `followUpMs`, a
    /// second keyframe follows that long after the first (for players that probe the stream
    /// first and drop what they probed, as ffmpeg with `-fflags nobuffer` does). While paused, the
    /// keyframe is the pause picture's. Forced keyframes are counted in the statistics
    /// (`keyframesForced`).
    @discardableResult
    public func requestKeyframe(followUpMs: Int? = nil) -> KeyframeRequestResult {
        guard let pipeline = pipeline else { return .noVideo }
        return pipeline.keyframeRequests.request(nowNs: MonotonicClock.nowNs(), followUpMs: followUpMs)
    }
}
