import Foundation
import Synchronization

/// What became of a request for a keyframe (`LivePusher.requestKeyframe()`, `livepush ctl keyframe`).
public enum KeyframeRequestResult: Equatable, Sendable {
    /// The next encoded picture is an IDR (x264 counts its GOP from there: the next natural
    /// keyframe follows one GOP later). `followUpMs`: a second one is due that long after it.
    case forced(followUpMs: Int?)
    /// None forced: one was forced `sinceMs` ago, under `KeyframeRequests.minIntervalMs`.
    case tooSoon(sinceMs: Int)
    /// None forced: a keyframe went out `ageMs` ago, under `KeyframeRequests.recentKeyframeMs`,
    /// so a viewer whose request comes now most likely started with it.
    case recentKeyframe(ageMs: Int)
    /// None forced: no video is being encoded (screen capture is not started).
    case noVideo

    /// Whether a keyframe was forced.
    public var isForced: Bool {
        if case .forced = self { return true }
        return false
    }

    /// For people: what happened and why.
    public var explanation: String {
        switch self {
        case .forced(let followUpMs):
            "the next picture is a keyframe" + (followUpMs.map { ", and another one \($0) ms after it" } ?? "")
        case .tooSoon(let sinceMs):
            "none forced: one was forced \(sinceMs) ms ago (at most one per \(KeyframeRequests.minIntervalMs) ms)"
        case .recentKeyframe(let ageMs):
            "none forced: a keyframe went out \(ageMs) ms ago (under \(KeyframeRequests.recentKeyframeMs) ms)"
        case .noVideo: "the broadcast has no video yet (screen capture is not running)"
        }
    }
}

/// Keyframes asked for from outside, typically when a viewer joins (nginx-rtmp's `exec_play`):
/// the request, the storm protection (at most one forced keyframe per `minIntervalMs`, none when
/// the last keyframe is younger than `recentKeyframeMs`), an optional second keyframe
/// `followUpMs` after the first, and the count. The video pipeline takes a due keyframe before
/// each encode and reports every keyframe it encoded.
final class KeyframeRequests: Sendable {
    /// At most one forced keyframe per this many ms, however many viewers join.
    static let minIntervalMs = 1000
    /// A keyframe younger than this is taken to have reached the viewer who asked (the hook that
    /// asks takes about this long to run).
    static let recentKeyframeMs = 300

    private struct State {
        var lastKeyframeNs: UInt64?
        var lastForcedNs: UInt64?
        var pending = false
        var followUpDueNs: UInt64?
        var forced = 0
    }

    private let state = Mutex(State())

    /// Asks for a keyframe now (and, with `followUpMs`, a second one that long after the first).
    func request(nowNs: UInt64, followUpMs: Int? = nil) -> KeyframeRequestResult {
        state.withLock { state in
            if let last = state.lastForcedNs, nowNs - last < UInt64(Self.minIntervalMs) * 1_000_000 {
                return .tooSoon(sinceMs: Int((nowNs - last) / 1_000_000))
            }
            if let last = state.lastKeyframeNs, nowNs - last < UInt64(Self.recentKeyframeMs) * 1_000_000 {
                return .recentKeyframe(ageMs: Int((nowNs - last) / 1_000_000))
            }
            state.lastForcedNs = nowNs
            state.pending = true
            state.followUpDueNs = followUpMs.map { nowNs + UInt64($0) * 1_000_000 }
            return .forced(followUpMs: followUpMs)
        }
    }

    /// On the pipeline thread before each encode: whether this picture must be a keyframe.
    func takeDue(nowNs: UInt64) -> Bool {
        state.withLock { state in
            var due = state.pending
            state.pending = false
            if let followUp = state.followUpDueNs, followUp <= nowNs {
                state.followUpDueNs = nil
                due = true
            }
            if due { state.forced += 1 }
            return due
        }
    }

    /// On the pipeline thread: a keyframe was encoded (forced or not).
    func keyframeEncoded(nowNs: UInt64) {
        state.withLock { $0.lastKeyframeNs = nowNs }
    }

    /// Keyframes forced on request since the start (the follow-ups included).
    var forcedCount: Int { state.withLock { $0.forced } }
}
