import Glibc
import LinuxSystem
import Synchronization

/// Everything the pusher sends one helper, without ever waiting on it (SPEC §4.1).
///
/// A message goes out with a non-blocking send. When the helper's socket is full (it reads
/// nothing, or too slowly), the message waits here, in order, behind any before it, and the link
/// thread sends what waits as the socket takes it (`flush`, on POLLOUT and on every tick). Since
/// when the socket has taken nothing is `fullSinceNs`: the session calls a helper whose socket
/// stays full for `peer_timeout_ms` hung (TIMEOUT), as it does a silent one. No thread of the
/// pusher (the link thread, the video thread giving a slot back, a caller of `sendConfig`) ever
/// blocks on a helper.
///
/// Threads: `send` from any thread; `flush`, `sendLast` and `close` on the link thread. All
/// state is under one lock, which is never held longer than a non-blocking sendmsg.
final class HelperOutbox: @unchecked Sendable {
    /// At most this many messages wait; past it the helper counts as hung at once (it sent
    /// frames much faster than it reads their RELEASEs).
    static let maxWaiting = 4096

    private struct State {
        /// The buffer each message is encoded into.
        var encoded: [UInt8] = []
        /// Messages the socket had no room for, oldest first (`first` is the next to go).
        var waiting: [[UInt8]] = []
        var first = 0
        /// When the socket last refused a message with nothing sent since (0: it takes them).
        var fullSinceNs: UInt64 = 0
        var overflowed = false
        var closed = false
        /// Stops every send (check-helper's silent pusher).
        var silent = false
    }

    private let socket: SeqPacketSocket
    private let state = Mutex(State())
    /// When a message last went out (for heartbeats).
    let lastSendNs = Atomic<UInt64>(MonotonicClock.nowNs())
    /// True while messages wait: the link thread then polls for POLLOUT.
    let hasWaiting = Atomic<Bool>(false)
    /// Called (on the sending thread, outside the lock) when a message starts to wait: wakes the link thread.
    private let onWaiting: @Sendable () -> Void

    init(socket: SeqPacketSocket, onWaiting: @escaping @Sendable () -> Void) {
        self.socket = socket
        self.onWaiting = onWaiting
    }

    /// Sends `message` now, or queues it behind those already waiting.
    func send(_ message: Message) {
        enqueue { message.encode(into: &$0) }
    }

    /// Sends raw bytes as one message (check-helper's probes).
    func send(bytes: [UInt8]) {
        enqueue { $0 = bytes }
    }

    private func enqueue(_ encode: (inout [UInt8]) -> Void) {
        let startedWaiting: Bool = state.withLock { state in
            guard !state.closed, !state.silent else { return false }
            encode(&state.encoded)
            if state.first == state.waiting.count {
                switch attempt(state.encoded) {
                case .sent:
                    return false
                case .full:
                    break  // wait below
                case .failed:
                    return false  // the helper is gone: the link thread reads its end of file
                }
            }
            if state.fullSinceNs == 0 { state.fullSinceNs = MonotonicClock.nowNs() }
            guard state.waiting.count - state.first < Self.maxWaiting else {
                state.overflowed = true
                return true
            }
            state.waiting.append(state.encoded)
            hasWaiting.store(true, ordering: .relaxed)
            return state.waiting.count - state.first == 1
        }
        if startedWaiting { onWaiting() }
    }

    /// Sends what waits, as far as the socket takes it (link thread).
    func flush() {
        state.withLock { state in
            while state.first < state.waiting.count && !state.closed {
                switch attempt(state.waiting[state.first]) {
                case .sent:
                    state.waiting[state.first] = []
                    state.first += 1
                    state.fullSinceNs = 0
                case .full:
                    if state.fullSinceNs == 0 { state.fullSinceNs = MonotonicClock.nowNs() }
                    return
                case .failed:
                    state.first = state.waiting.count
                }
            }
            state.waiting.removeAll(keepingCapacity: true)
            state.first = 0
            hasWaiting.store(false, ordering: .relaxed)
        }
    }

    private enum Attempt { case sent, full, failed }

    /// One non-blocking send (under the lock).
    private func attempt(_ bytes: [UInt8]) -> Attempt {
        do {
            guard try socket.sendWithoutWaiting(bytes) else { return .full }
        } catch {
            return .failed
        }
        lastSendNs.store(MonotonicClock.nowNs(), ordering: .relaxed)
        return .sent
    }

    /// For how long the socket has taken nothing while messages waited (ms), or nil while it
    /// takes them; `.max` when more than `maxWaiting` messages piled up.
    func fullForMs(nowNs: UInt64) -> UInt64? {
        state.withLock { state in
            if state.overflowed { return .max }
            guard state.fullSinceNs != 0, state.first < state.waiting.count else { return nil }
            return (nowNs &- state.fullSinceNs) / 1_000_000
        }
    }

    /// The number of messages waiting.
    var waitingCount: Int { state.withLock { $0.waiting.count - $0.first } }

    /// The session's last message (ERROR, when the helper is hung or broke a rule): sent ahead of
    /// what waits, with the send buffer enlarged so that it fits behind what the helper left
    /// unread; what waited is dropped. Then nothing more is sent.
    func sendLast(_ message: Message) {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            state.waiting.removeAll()
            state.first = 0
            hasWaiting.store(false, ordering: .relaxed)
            guard !state.silent else { return }
            message.encode(into: &state.encoded)
            if attempt(state.encoded) == .full {
                socket.enlargeSendBuffer()
                _ = attempt(state.encoded)
            }
        }
    }

    /// Nothing more is sent; what waits is dropped.
    func close() {
        state.withLock { state in
            state.closed = true
            state.waiting.removeAll()
            state.first = 0
            hasWaiting.store(false, ordering: .relaxed)
        }
    }

    /// While on, nothing at all is sent (check-helper's silent pusher); turning it off sends again.
    func setSilent(_ on: Bool) {
        state.withLock { $0.silent = on }
    }
}
