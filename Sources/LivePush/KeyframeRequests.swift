import Foundation
import Synchronization

/// What became of a request for a keyframe (`LivePusher.requestKeyframe()`, `livepush ctl keyframe`).
public enum KeyframeRequestResult: Equatable, Sendable {
    /// The next encoded picture is an IDR (x264 counts its GOP from there: the next natural
    /// keyframe follows one GOP later). `followUpMs`: a second one is due that long after it.
    case forced(followUpMs: Int?)
    /// One was forced under `KeyframeRequests.minIntervalMs` ago: the next one is forced in
    /// `inMs`, when the interval is over (all requests until then share it).
    case deferred(inMs: Int, followUpMs: Int?)
    /// None forced now: a keyframe went out `ageMs` ago, under `KeyframeRequests.recentKeyframeMs`,
    /// after the viewer who asked had joined (the hook that asks takes longer than that). A
    /// follow-up, if asked for, is still due.
    case recentKeyframe(ageMs: Int, followUpMs: Int?)
    /// None forced: no video is being encoded (screen capture is not started).
    case noVideo

    /// Whether a keyframe will be forced for this request (now or when the interval is over).
    public var isForced: Bool {
        switch self {
        case .forced, .deferred: true
        case .recentKeyframe, .noVideo: false
        }
    }

    /// For people: what happened and why.
    public var explanation: String {
        func followUp(_ ms: Int?) -> String { ms.map { ", and another one \($0) ms after it" } ?? "" }
        switch self {
        case .forced(let followUpMs): return "the next picture is a keyframe" + followUp(followUpMs)
        case .deferred(let inMs, let followUpMs):
            return "a keyframe in \(inMs) ms (at most one per \(KeyframeRequests.minIntervalMs) ms)" + followUp(followUpMs)
        case .recentKeyframe(let ageMs, let followUpMs):
            return "none forced now: a keyframe went out \(ageMs) ms ago (under \(KeyframeRequests.recentKeyframeMs) ms)"
                + (followUpMs.map { "; another one \($0) ms from now" } ?? "")
        case .noVideo: return "the broadcast has no video yet (screen capture is not running)"
        }
    }
}

/// Keyframes asked for from outside, typically when a viewer joins (nginx-rtmp's `exec_play`):
/// the request, the storm protection (at most one forced keyframe per `minIntervalMs`: a request
/// within it is served when it is over; none when the last keyframe is younger than
/// `recentKeyframeMs`), an optional second keyframe `followUpMs` after the first, and the count.
/// The video pipeline takes a due keyframe before each encode and reports every keyframe it encoded.
final class KeyframeRequests: Sendable {
    /// At most one forced keyframe per this many ms, however many viewers join.
    static let minIntervalMs = 1000
    /// A keyframe younger than this went out after the viewer who asks now had joined: the hook
    /// that asks (nginx forking `livepush ctl`, which connects and sends) takes longer, 40 to 90 ms
    /// here. An older one most likely did not reach that viewer (nginx starts a joiner's video at
    /// the next keyframe), so it gets one.
    static let recentKeyframeMs = 40

    private struct State {
        var lastKeyframeNs: UInt64?
        /// When the last forced keyframe was (or will be) due.
        var lastForcedNs: UInt64?
        var dueNs: UInt64?
        var followUpDueNs: UInt64?
        var forced = 0
    }

    private let state = Mutex(State())

    private static func ns(_ ms: Int) -> UInt64 { UInt64(ms) * 1_000_000 }

    /// Asks for a keyframe now (and, with `followUpMs`, a second one that long after the first).
    func request(nowNs: UInt64, followUpMs: Int? = nil) -> KeyframeRequestResult {
        state.withLock { state in
            if let last = state.lastKeyframeNs, nowNs - last < Self.ns(Self.recentKeyframeMs) {
                if let followUpMs { state.followUpDueNs = nowNs + Self.ns(followUpMs) }
                return .recentKeyframe(ageMs: Int((nowNs - last) / 1_000_000), followUpMs: followUpMs)
            }
            // One is due already (an earlier request in this interval): this one shares it.
            if let due = state.dueNs {
                if let followUpMs { state.followUpDueNs = due + Self.ns(followUpMs) }
                return due <= nowNs ? .forced(followUpMs: followUpMs)
                    : .deferred(inMs: Int((due - nowNs) / 1_000_000), followUpMs: followUpMs)
            }
            var dueNs = nowNs
            if let last = state.lastForcedNs, last + Self.ns(Self.minIntervalMs) > nowNs {
                dueNs = last + Self.ns(Self.minIntervalMs)
            }
            state.lastForcedNs = dueNs
            state.dueNs = dueNs
            state.followUpDueNs = followUpMs.map { dueNs + Self.ns($0) }
            return dueNs == nowNs ? .forced(followUpMs: followUpMs)
                : .deferred(inMs: Int((dueNs - nowNs) / 1_000_000), followUpMs: followUpMs)
        }
    }

    /// On the pipeline thread before each encode: whether this picture must be a keyframe.
    func takeDue(nowNs: UInt64) -> Bool {
        state.withLock { state in
            var due = false
            if let dueNs = state.dueNs, dueNs <= nowNs {
                state.dueNs = nil
                due = true
            }
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
