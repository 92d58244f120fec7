/// A helper's timestamp far ahead of the pusher's clock, replaced by its arrival time (SPEC §9,
/// decision 20): the helper's clock is wrong. Not a violation: the session goes on.
public struct ImplausibleTimestamp: Equatable, Sendable, CustomStringConvertible {
    /// "FRAME" or "AUDIO".
    public let message: String
    /// How far ahead the timestamp that raised this warning was.
    public let aheadMs: UInt64
    /// Timestamps of this message type replaced since the previous warning, this one included.
    public let replacedSinceLastWarning: Int
    /// Timestamps of this message type replaced in the session.
    public let replacedInSession: Int

    public var description: String {
        "the capture helper's \(message).pts_ns is \(aheadMs) ms ahead of the pusher's clock (more than "
            + "\(TimestampCheck.aheadLimitNs / 1_000_000) ms: its clock is wrong); the arrival time is used instead"
            + (replacedInSession > 1
                ? " (\(replacedSinceLastWarning) replaced since the last warning, \(replacedInSession) in this session)"
                : "")
    }
}

/// Counts the replaced timestamps of one session and says when to warn: at the first, then at
/// most once per `warningIntervalNs` per message type, so a helper that stamps every message
/// wrongly makes a handful of warnings, not thousands. Link thread only.
struct TimestampCheck {
    /// More than this ahead of the pusher's clock is implausible (SPEC §9).
    static let aheadLimitNs: UInt64 = 1_000_000_000
    static let warningIntervalNs: UInt64 = 10_000_000_000

    private struct Count {
        var lastWarningNs: UInt64?
        var sinceWarning = 0
        var total = 0
    }
    private var counts: [String: Count] = [:]

    /// Counts one replaced timestamp of `message`; returns the warning to give now, if any.
    mutating func replaced(_ message: String, aheadNs: UInt64, nowNs: UInt64) -> ImplausibleTimestamp? {
        var count = counts[message, default: Count()]
        count.sinceWarning += 1
        count.total += 1
        defer { counts[message] = count }
        if let last = count.lastWarningNs, nowNs &- last < Self.warningIntervalNs { return nil }
        let warning = ImplausibleTimestamp(message: message, aheadMs: aheadNs / 1_000_000,
                                           replacedSinceLastWarning: count.sinceWarning, replacedInSession: count.total)
        count.lastWarningNs = nowNs
        count.sinceWarning = 0
        return warning
    }
}
