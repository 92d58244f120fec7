/// When a push destination tries again after its connection failed or broke, and when it gives up
/// (docs/guide.md, "Reconnection"): the first wait is `connectRetryIntervalMs`, each failed attempt
/// doubles it up to `maxWaitMs` (30 s, or the first wait when that is longer), each wait moved by up
/// to a tenth either way (jitter: many pushers that lost one server do not all call it back in the
/// same second). It gives up once `retryForMs` have passed since the outage began (0: never), or
/// after `maxAttempts` attempts (nil: no count; 0: at the first failure), whichever comes first.
///
/// An outage begins with the first failure after a connection published (or the first connection's
/// failure) and ends when a connection publishes again. Owned by one sender thread (`PushOutput`).
struct ReconnectSchedule: Sendable {
    /// The longest wait between two attempts, unless the first wait is longer.
    static let maxWaitCapMs = 30_000

    let firstWaitMs: Int
    let maxWaitMs: Int
    /// How long one outage is retried, ms; 0: for ever.
    let retryForMs: Int
    /// The most attempts in one outage; nil: no count.
    let maxAttempts: Int?

    /// The attempts made in the current outage (the next one's number is this plus one).
    private(set) var attempts = 0
    /// When the current outage began; nil while connected.
    private var outageStartNs: UInt64?

    init(firstWaitMs: Int, retryForMs: Int, maxAttempts: Int?) {
        self.firstWaitMs = firstWaitMs
        maxWaitMs = max(Self.maxWaitCapMs, firstWaitMs)
        self.retryForMs = retryForMs
        self.maxAttempts = maxAttempts
    }

    /// What comes after a failure: the attempt that follows, after a wait.
    struct Retry: Equatable, Sendable {
        /// 1 for the first attempt after the outage began.
        let attempt: Int
        let waitMs: Int
    }

    /// A connection published: the outage, if any, is over.
    mutating func connected() {
        attempts = 0
        outageStartNs = nil
    }

    /// A reconnection asked for (`reconnectPush`): an attempt at once, counted as the first of an
    /// outage that begins now.
    mutating func requested(atNs nowNs: UInt64) -> Retry {
        outageStartNs = nowNs
        attempts = 1
        return Retry(attempt: 1, waitMs: 0)
    }

    /// A connection failed or broke at `nowNs`: the next attempt and the wait before it, or nil to
    /// give up. `random` in 0...1 places the wait within its jitter.
    mutating func failed(atNs nowNs: UInt64, random: Double) -> Retry? {
        let startNs = outageStartNs ?? nowNs
        outageStartNs = startNs
        if let maxAttempts, attempts >= maxAttempts { return nil }
        let elapsedMs = Int((nowNs - startNs) / 1_000_000)
        if retryForMs > 0 && elapsedMs >= retryForMs { return nil }
        attempts += 1
        var waitMs = Self.wait(attempt: attempts, firstWaitMs: firstWaitMs, maxWaitMs: maxWaitMs, random: random)
        if retryForMs > 0 { waitMs = min(waitMs, retryForMs - elapsedMs) }  // the last attempt at the deadline
        return Retry(attempt: attempts, waitMs: waitMs)
    }

    /// The wait before attempt `attempt` (1, 2, ...): the first wait doubled for each attempt before
    /// it, at most `maxWaitMs`, moved by up to a tenth either way, never more than `maxWaitMs`.
    static func wait(attempt: Int, firstWaitMs: Int, maxWaitMs: Int, random: Double) -> Int {
        let doublings = min(max(0, attempt - 1), 20)
        let baseMs = min(maxWaitMs, firstWaitMs << doublings)
        let jitterMs = Int((Double(baseMs) * 0.2 * (min(1, max(0, random)) - 0.5)).rounded())
        return min(maxWaitMs, baseMs + jitterMs)
    }

    /// "attempt 3 of 5", "attempt 3, retrying for 5 min", "attempt 3, retrying for ever".
    func describe(_ retry: Retry) -> String {
        if let maxAttempts { return "attempt \(retry.attempt) of \(maxAttempts)" }
        return "attempt \(retry.attempt), retrying " + (retryForMs == 0 ? "for ever" : "for \(Self.text(ms: retryForMs))")
    }

    /// 300000 as "5 min", 90000 as "90 s", 1500 as "1500 ms".
    static func text(ms: Int) -> String {
        if ms % 3_600_000 == 0 { return "\(ms / 3_600_000) h" }
        if ms % 60_000 == 0 { return "\(ms / 60_000) min" }
        if ms % 1000 == 0 { return "\(ms / 1000) s" }
        return "\(ms) ms"
    }
}
