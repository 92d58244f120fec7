import CLinuxShim
import Dispatch
import Glibc
import LinuxSystem
import Synchronization

/// How the pusher side serves helpers.
public struct PusherEndpointConfiguration: Sendable {
    public var group: String
    /// Overrides XDG_RUNTIME_DIR for the socket's directory (tests).
    public var runtimeDirectory: String?
    /// The largest frame accepted; the ring is sized for it.
    public var maxWidth: UInt32 = 3840
    public var maxHeight: UInt32 = 2160
    /// The frame rate asked of helpers.
    public var fps: UInt32 = 30
    public var slotCount: UInt32 = 3
    public var pixelFormats: [PixelFormat] = PixelFormat.allCases
    public var audioFormats: [AudioFormat] = AudioFormat.allCases
    /// Users other than this process's own that may connect (default: none).
    public var allowedUIDs: Set<UInt32> = []
    public var heartbeatIntervalMs: UInt32 = CaptureLinkProtocol.heartbeatIntervalMs
    public var peerTimeoutMs: UInt32 = CaptureLinkProtocol.peerTimeoutMs

    public init(group: String) { self.group = group }
}

/// The pusher's end of Capture Link: listens on a group, serves one helper at a time,
/// creates and seals each session's ring, validates every message, and reports events.
///
/// Threads: one link thread owns the sockets and calls `handler` for each event, in order.
/// `acquireLatestFrame`, `BorrowedFrame.release`, `sendConfig` and `stop` may be called
/// from any thread.
public final class PusherEndpoint: @unchecked Sendable {
    public let rendezvous: Rendezvous
    public let configuration: PusherEndpointConfiguration
    private let handler: @Sendable (CaptureLinkEvent) -> Void
    private let listenDescriptor: Int32
    /// The group's lock, held while listening.
    private let lockDescriptor: Int32
    private let wakeDescriptor: Int32
    private let running = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let finishedSemaphore = DispatchSemaphore(value: 0)
    /// The session of the connected helper; set and cleared on the link thread, read anywhere.
    private let current = Mutex<PusherSession?>(nil)

    /// Binds the group's socket (replacing a stale one) and starts the link thread.
    public init(
        configuration: PusherEndpointConfiguration, handler: @escaping @Sendable (CaptureLinkEvent) -> Void
    ) throws(Rendezvous.Failure) {
        self.configuration = configuration
        self.handler = handler
        rendezvous = try Rendezvous(group: configuration.group, runtimeDirectory: configuration.runtimeDirectory)
        let listening = try rendezvous.listen()
        listenDescriptor = listening.socket
        lockDescriptor = listening.lock
        wakeDescriptor = CLinuxShim_eventfd(0, CLinuxShim_EFD_CLOEXEC | CLinuxShim_EFD_NONBLOCK)
        running.store(true, ordering: .sequentiallyConsistent)
        DetachedThread.start(name: "livepush-link") { [self] in runLoop() }
    }

    deinit {
        stop()
    }

    /// Asks a connected helper to stop (STOP, pusher exiting), closes the socket, removes its
    /// file and ends the link thread. Frames still borrowed stay valid until released.
    public func stop() {
        guard running.exchange(false, ordering: .sequentiallyConsistent) else { return }
        stopping.store(true, ordering: .sequentiallyConsistent)
        wake()
        finishedSemaphore.wait()
        close(listenDescriptor)
        close(wakeDescriptor)
        unlink(rendezvous.socketPath)
        unlink(rendezvous.lockPath)  // before releasing it: a pusher that locked this file checks it is still there
        close(lockDescriptor)
    }

    /// Borrows the newest frame, or nil when there is none. Release it when done; until then
    /// its slot stays with the pusher and its pixels do not change.
    public func acquireLatestFrame() -> BorrowedFrame? {
        let session = current.withLock { $0 }
        return session?.acquireLatest()
    }

    /// Sends CONFIG to the connected helper, if any.
    public func sendConfig(_ config: Config) {
        let session = current.withLock { $0 }
        session?.send(.config(config))
    }

    /// The largest frame wanted of a helper that scales, or nil for WELCOME's maximum (see
    /// `requestMaxSize`); read by the session on the link thread.
    let wantedMaxSize = Mutex<(width: UInt32, height: UInt32)?>(nil)

    /// Asks for frames no larger than `width` x `height` (adaptive resolution), or with nil for
    /// WELCOME's maximum again. Only a helper granted `LPC_CAP_SCALE` is sent it, in a CONFIG
    /// now and after each START (SPEC clarification 28): it scales and never crops. A helper
    /// without the capability keeps WELCOME's maximum, since it may crop to a smaller CONFIG
    /// (§12.5); the pusher scales its frames instead.
    public func requestMaxSize(width: UInt32, height: UInt32) {
        wantedMaxSize.withLock { $0 = (width, height) }
        wake()
    }

    /// Asks a scaling helper for WELCOME's maximum again (`requestMaxSize` undone).
    public func requestFullSize() {
        wantedMaxSize.withLock { $0 = nil }
        wake()
    }

    /// Asks the connected helper to finish (STOP, user, sent before this returns unless the helper's
    /// socket is full); it is disconnected after 1 s regardless.
    public func requestStop(text: String = "screen capture stopped") {
        let session = current.withLock { $0 }
        session?.askToStop(reason: .user, text: text)
        wake()
    }

    // MARK: Probes for `livepush check-helper` (the paths a helper must handle, SPEC §7, §11, §13, §14)

    /// While on, the pusher keeps every slot the helper sends (no RELEASE); turning it off gives
    /// back every kept slot but the newest frame's.
    public func setWithholdingReleases(_ on: Bool) {
        guard let session = current.withLock({ $0 }) else { return }
        session.withholdingReleases.store(on, ordering: .relaxed)
        if !on { session.releaseWithheld() }
    }

    /// While on, the pusher sends nothing at all (no RELEASE, HEARTBEAT or CONFIG): a silent pusher.
    public func setSilent(_ on: Bool) {
        current.withLock { $0 }?.outbox.setSilent(on)
    }

    /// Sends a message of any type as it is (e.g. an unknown type, with or without LPC_FLAG_OPTIONAL).
    public func sendRaw(type: UInt16, flags: UInt16, payload: [UInt8]) {
        var bytes: [UInt8] = []
        for (value, count) in [(UInt64(CaptureLinkProtocol.messageMagic), 4), (UInt64(type), 2), (UInt64(flags), 2),
                               (UInt64(payload.count), 4), (0, 4)] {
            for index in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
        }
        current.withLock { $0 }?.sendBytes(bytes + payload)
    }

    /// Ends the session on the link thread with ERROR {code, text}, as after a violation.
    public func sendError(_ code: ErrorCode, text: String) {
        current.withLock { $0 }?.askToFail(Reason(code: code.rawValue, text: text))
        wake()
    }

    /// Makes the link thread take a turn now (a request, a message waiting to be sent).
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
    }

    // MARK: The link thread

    private func runLoop() {
        defer { finishedSemaphore.signal() }
        var session: PusherSession?
        while running.load(ordering: .sequentiallyConsistent) {
            var fds = [
                pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: listenDescriptor, events: Int16(POLLIN), revents: 0),
            ]
            if let session {
                // POLLOUT only while messages wait for room (SPEC §4.1: never a blocking send).
                let events = Int16(POLLIN) | (session.outbox.hasWaiting.load(ordering: .relaxed) ? Int16(POLLOUT) : 0)
                fds.append(pollfd(fd: session.socket.descriptor, events: events, revents: 0))
            }
            let ready = poll(&fds, nfds_t(fds.count), rejected.isEmpty ? 100 : 20)
            if ready < 0 && errno != EINTR { break }
            if fds[0].revents != 0 {
                var value: UInt64 = 0
                _ = read(wakeDescriptor, &value, 8)
            }
            if fds[1].revents & Int16(POLLIN) != 0 { accept(into: &session) }
            if let active = session, fds.count > 2, fds[2].revents != 0 {
                if fds[2].revents & Int16(POLLOUT) != 0 { active.outbox.flush() }
                active.receiveAvailable()
            }
            if let active = session {
                active.tick(nowNs: MonotonicClock.nowNs())
                if active.isClosed { end(&session) }
            }
            if !rejected.isEmpty { drainRejected() }
            if let summary = refusals.summary(nowNs: MonotonicClock.nowNs()) { handler(summary) }
        }
        rejected.removeAll()
        if let summary = refusals.summary(nowNs: .max) { handler(summary) }  // the refusals not reported yet
        if let active = session {
            // STOP, then wait (at most the 1 s grace) for the helper's FINISH before closing.
            active.stop(reason: .pusherExiting, text: "the pusher is shutting down")
            let deadlineNs = MonotonicClock.nowNs() + 1_000_000_000
            while !active.isClosed && MonotonicClock.nowNs() < deadlineNs {
                active.outbox.flush()
                var ready = pollfd(fd: active.socket.descriptor, events: Int16(POLLIN), revents: 0)
                if poll(&ready, 1, 50) > 0 { active.receiveAvailable() }
            }
            active.close()
            end(&session)
        }
    }

    private func end(_ session: inout PusherSession?) {
        if let ended = session, ended.lingers { linger(ended.socket) }
        session = nil
        current.withLock { $0 = nil }
    }

    private func accept(into session: inout PusherSession?) {
        let fd = CLinuxShim_accept_cloexec(listenDescriptor)
        guard fd >= 0 else { return }
        let socket = SeqPacketSocket(adopting: fd)
        let peer = (try? socket.peerCredentials()) ?? (pid: 0, uid: UInt32.max)
        if peer.uid != getuid() && !configuration.allowedUIDs.contains(peer.uid) {
            reject(socket, .peerUid, "helper runs as uid \(peer.uid) but this pusher runs as uid \(getuid()); "
                + "run the helper as the same user")
            return
        }
        if let active = session {
            reject(socket, .busy, "group '\(configuration.group)' is busy: helper '\(active.helperName)' "
                + "(pid \(active.peerPid)) is connected")
            return
        }
        let newSession = PusherSession(socket: socket, peer: peer, endpoint: self)
        session = newSession
        current.withLock { $0 = newSession }
    }

    /// How long a closing pusher drains a connection before closing it (SPEC §4.7, the linger).
    private let lingerNs: UInt64 = 1_000_000_000

    /// Turns a connection away before its session begins. The socket stays open, its input
    /// discarded, until the helper closes it or for the linger (1 s): closing at once could reset the
    /// connection before the helper has read why (its HELLO would fail with EPIPE).
    private func reject(_ socket: SeqPacketSocket, _ code: ErrorCode, _ text: String) {
        _ = try? socket.sendWithoutWaiting(Message.reject(Reason(code: code.rawValue, text: text)).encoded())
        shutdown(socket.descriptor, Int32(SHUT_WR))
        linger(socket)
        if refusals.admit(code, nowNs: MonotonicClock.nowNs()) { handler(.rejected(code: code, reason: text)) }
    }

    /// How many refusals are reported one by one; link thread only.
    private var refusals = RefusalLimiter()

    private func linger(_ socket: SeqPacketSocket) {
        rejected.append((socket, MonotonicClock.nowNs() + lingerNs))
    }

    /// Connections turned away or ended by a violation, kept until their helper has read why.
    private var rejected: [(socket: SeqPacketSocket, closeAtNs: UInt64)] = []

    private func drainRejected() {
        let nowNs = MonotonicClock.nowNs()
        rejected.removeAll { entry in
            while true {
                switch try? entry.socket.receive(blocking: false) {
                case .datagram(_, let descriptors, _, _): closeAll(descriptors)
                case .wouldBlock: return nowNs >= entry.closeAtNs
                default: return true
                }
            }
        }
    }

    func report(_ event: CaptureLinkEvent) { handler(event) }
}

/// Reports refused connections one by one up to `perWindow` in `windowNs`, then counts the rest
/// and reports them as one event when the window ends: 300 connections at once make four
/// events, not 300. Link thread only.
struct RefusalLimiter {
    static let perWindow = 3
    static let windowNs: UInt64 = 10_000_000_000

    private var windowStartNs: UInt64 = 0
    private var reported = 0
    private var suppressed: [ErrorCode: Int] = [:]

    /// Whether this refusal is reported on its own; if not, it is counted for the summary.
    mutating func admit(_ code: ErrorCode, nowNs: UInt64) -> Bool {
        if nowNs &- windowStartNs >= Self.windowNs && suppressed.isEmpty {
            windowStartNs = nowNs
            reported = 0
        }
        if reported < Self.perWindow && suppressed.isEmpty {
            reported += 1
            return true
        }
        suppressed[code, default: 0] += 1
        return false
    }

    /// The summary of the refusals not reported, once their window has ended (`.max`: now).
    mutating func summary(nowNs: UInt64) -> CaptureLinkEvent? {
        guard !suppressed.isEmpty, nowNs &- windowStartNs >= Self.windowNs else { return nil }
        let total = suppressed.values.reduce(0, +)
        let codes = suppressed.sorted { $0.value > $1.value }
        let byRule = codes.map { "\($0.key.name) \($0.value)" }.joined(separator: ", ")
        let seconds = Self.windowNs / 1_000_000_000
        suppressed = [:]
        windowStartNs = nowNs
        reported = 0
        return .rejected(code: codes[0].key, reason: "\(total) more connections were refused in \(seconds) s "
            + "(\(byRule)); the first \(Self.perWindow) were reported one by one")
    }
}
