import CLinuxShim
import Foundation
import Glibc
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
    private var thread: Thread?
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
        let thread = Thread { [self] in runLoop() }
        thread.name = "livepush-link"
        self.thread = thread
        thread.start()
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

    /// Asks the connected helper to finish (STOP, user); it is disconnected after 1 s regardless.
    public func requestStop(text: String = "screen capture stopped") {
        let session = current.withLock { $0 }
        session?.requestStop(reason: .user, text: text)
        wake()
    }

    private func wake() {
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
            if let session { fds.append(pollfd(fd: session.socket.descriptor, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), rejected.isEmpty ? 100 : 20)
            if ready < 0 && errno != EINTR { break }
            if fds[0].revents != 0 {
                var value: UInt64 = 0
                _ = read(wakeDescriptor, &value, 8)
            }
            if fds[1].revents & Int16(POLLIN) != 0 { accept(into: &session) }
            if let active = session, fds.count > 2, fds[2].revents != 0 {
                active.receiveAvailable()
            }
            if let active = session {
                active.tick(nowNs: MonotonicClock.nowNs())
                if active.isClosed { end(&session) }
            }
            if !rejected.isEmpty { drainRejected() }
        }
        rejected.removeAll()
        if let active = session {
            // STOP, then wait (at most the 1 s grace) for the helper's FINISH before closing.
            active.requestStop(reason: .pusherExiting, text: "the pusher is shutting down")
            let deadlineNs = MonotonicClock.nowNs() + 1_000_000_000
            while !active.isClosed && MonotonicClock.nowNs() < deadlineNs {
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
        try? socket.send(Message.reject(Reason(code: code.rawValue, text: text)).encoded())
        shutdown(socket.descriptor, Int32(SHUT_WR))
        linger(socket)
        handler(.rejected(code: code, reason: text))
    }

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

    fileprivate func report(_ event: CaptureLinkEvent) { handler(event) }
}

// MARK: - One helper's session

/// The state of one connected helper. Its message handling runs on the link thread; slot
/// ownership is shared with consumers and guarded by `slots`.
final class PusherSession: @unchecked Sendable {
    enum State { case awaitingHello, ready, capturing, paused, closed }

    struct Slots {
        /// Slots the pusher holds; the rest belong to the helper.
        var heldByPusher: Set<UInt32> = []
        var borrowCount: [UInt32: Int] = [:]
        var latest: FrameInfo?
        var framesReceived: UInt64 = 0
        var closed = false
    }

    let socket: SeqPacketSocket
    let peerPid: Int32
    let peerUid: UInt32
    private unowned let endpoint: PusherEndpoint
    private var state = State.awaitingHello
    private(set) var helperName = "(before HELLO)"
    private var mapping: UnsafeRingMapping?
    private var welcome: Welcome?
    private var acceptedFormats: Set<PixelFormat> = []
    private var acceptedAudio: Set<AudioFormat> = []
    private var lastSequence: UInt64 = 0
    private var lastFramePtsNs: UInt64 = 0
    private var lastAudioPtsNs: UInt64 = 0
    private var lastReceiveNs = MonotonicClock.nowNs()
    private let lastSendNs = Atomic<UInt64>(MonotonicClock.nowNs())
    private let stopDeadlineNs = Atomic<UInt64>(0)
    private let slots = Mutex(Slots())

    init(socket: SeqPacketSocket, peer: (pid: pid_t, uid: uid_t), endpoint: PusherEndpoint) {
        self.socket = socket
        self.peerPid = peer.pid
        self.peerUid = peer.uid
        self.endpoint = endpoint
    }

    var isClosed: Bool { state == .closed }

    func send(_ message: Message) {
        if slots.withLock({ $0.closed }) { return }
        try? socket.send(message.encoded())
        lastSendNs.store(MonotonicClock.nowNs(), ordering: .relaxed)
    }

    func requestStop(reason: StopReason, text: String) {
        guard state != .closed, stopDeadlineNs.load(ordering: .relaxed) == 0 else { return }
        send(.stop(Reason(code: reason.rawValue, text: text)))
        stopDeadlineNs.store(MonotonicClock.nowNs() + 1_000_000_000, ordering: .relaxed)
    }

    /// True when the session ended by sending the helper a reason (ERROR, REJECT): the
    /// endpoint then keeps the socket open briefly so that the helper can read it.
    private(set) var lingers = false

    /// Closes the connection. Borrowed frames keep the ring mapped until they are released.
    func close(lingering: Bool = false) {
        state = .closed
        slots.withLock {
            $0.closed = true
            $0.latest = nil
        }
        if lingering {
            lingers = true
            shutdown(socket.descriptor, Int32(SHUT_WR))
        } else {
            socket.close()
        }
    }

    // MARK: Timers

    func tick(nowNs: UInt64) {
        guard state != .closed else { return }
        let config = endpoint.configuration
        let deadline = stopDeadlineNs.load(ordering: .relaxed)
        if deadline != 0 && nowNs >= deadline {
            close()
            endpoint.report(.lost(reason: "helper did not finish within 1 s of STOP"))
            return
        }
        let silentMs = (nowNs &- lastReceiveNs) / 1_000_000
        if silentMs >= UInt64(config.peerTimeoutMs) {
            let text = "no message for \(silentMs) ms (limit \(config.peerTimeoutMs) ms)"
            send(.error(Reason(code: ErrorCode.timeout.rawValue, text: text)))
            close(lingering: true)
            endpoint.report(.lost(reason: "helper hung: \(text)"))
            return
        }
        if state != .awaitingHello,
           (nowNs &- lastSendNs.load(ordering: .relaxed)) / 1_000_000 >= UInt64(config.heartbeatIntervalMs)
        {
            let consumed = slots.withLock { $0.framesReceived }
            send(.heartbeat(Heartbeat(timeNs: nowNs, framesSent: consumed, framesDropped: 0)))
        }
    }

    // MARK: Receiving

    /// Handles every message waiting on the socket.
    func receiveAvailable() {
        while state != .closed {
            let received: Received
            do {
                received = try socket.receive(blocking: false)
            } catch {
                close()
                endpoint.report(.lost(reason: "helper connection failed: \(error)"))
                return
            }
            switch received {
            case .wouldBlock:
                return
            case .endOfStream:
                let beforeHello = state == .awaitingHello
                close()
                // A connection closed before HELLO is a probe (another pusher checking whether
                // this group is live), not a helper that was lost.
                if !beforeHello { endpoint.report(.lost(reason: "helper closed the connection without FINISH")) }
                return
            case .datagram(let count, let descriptors, let truncated, let controlTruncated):
                lastReceiveNs = MonotonicClock.nowNs()
                closeAll(descriptors)
                do throws(ProtocolViolation) {
                    if truncated {
                        throw ProtocolViolation(.truncated, "message longer than \(CaptureLinkProtocol.messageMaxBytes) bytes")
                    }
                    if controlTruncated {
                        throw ProtocolViolation(.truncated, "more descriptors than the "
                            + "\(CaptureLinkProtocol.maxDescriptorsPerMessage) a message may carry")
                    }
                    let message = try Message.decode(socket.receivedBytes(count), descriptorCount: descriptors.count)
                    if case .welcome = message {
                        throw ProtocolViolation(.state, "WELCOME is the pusher's message; a helper never sends it")
                    }
                    try handle(message)
                } catch {
                    violation(error, message: Array(socket.receivedBytes(min(count, 64))))
                    return
                }
            }
        }
    }

    private func violation(_ violation: ProtocolViolation, message: [UInt8]) {
        send(.error(Reason(code: violation.code.rawValue, text: violation.detail)))
        close(lingering: true)
        endpoint.report(.violation(violation, message: message))
    }

    private func handle(_ message: Message) throws(ProtocolViolation) {
        switch (state, message) {
        case (_, .ignoredOptional):
            return
        case (.awaitingHello, .hello(let hello)):
            try welcomeHelper(hello)
        case (.awaitingHello, _):
            throw ProtocolViolation(.state, "\(message.name) before HELLO; HELLO must be the first message")
        case (_, .heartbeat):
            return
        case (_, .finish(let reason)):
            close()
            endpoint.report(.finished(reasonCode: reason.code, text: reason.text))
        case (_, .error(let reason)):
            close()
            let name = ErrorCode(rawValue: reason.code)?.name ?? "code \(reason.code)"
            endpoint.report(.lost(reason: "helper reported \(name): \(reason.text)"))
        case (.ready, .start(let start)):
            try checkSourceInfo(start.info)
            state = .capturing
            endpoint.report(.started(sourceInfo: start.info))
        case (.capturing, .frame(let frame)):
            try receiveFrame(frame)
        case (.capturing, .audio(let audio)), (.paused, .audio(let audio)):
            try receiveAudio(audio)
        case (.capturing, .pause(let reasonCode)):
            state = .paused
            endpoint.report(.paused(reasonCode: reasonCode))
        case (.paused, .resume):
            state = .capturing
            endpoint.report(.resumed)
        default:
            throw ProtocolViolation(.state, "\(message.name) is not allowed \(stateDescription)")
        }
    }

    private var stateDescription: String {
        switch state {
        case .awaitingHello: return "before HELLO"
        case .ready: return "before START"
        case .capturing: return "while capturing"
        case .paused: return "while paused"
        case .closed: return "after the session ended"
        }
    }

    private func checkSourceInfo(_ info: String) throws(ProtocolViolation) {
        let object = try? JSONSerialization.jsonObject(with: Data(info.utf8))
        guard object is [String: Any] else {
            throw ProtocolViolation(.text, "START.info is not a JSON object: \(info.prefix(80))")
        }
    }

    // MARK: HELLO -> WELCOME

    private func welcomeHelper(_ hello: Hello) throws(ProtocolViolation) {
        helperName = hello.helperName
        let config = endpoint.configuration
        guard hello.versionMajor == CaptureLinkProtocol.versionMajor else {
            return refuse(.version, "helper speaks Capture Link \(hello.versionMajor).\(hello.versionMinor), "
                + "this pusher speaks \(CaptureLinkProtocol.versionMajor).\(CaptureLinkProtocol.versionMinor)")
        }
        let formats = PixelFormat.set(hello.pixelFormatBits).filter { config.pixelFormats.contains($0) }
        guard !formats.isEmpty else {
            let offered = PixelFormat.set(hello.pixelFormatBits).map(\.description).joined(separator: ", ")
            let accepted = config.pixelFormats.map(\.description).joined(separator: ", ")
            return refuse(.format, "no common pixel format: helper offers [\(offered)], pusher accepts [\(accepted)]")
        }
        guard hello.maxWidth > 0, hello.maxHeight > 0 else {
            return refuse(.geometry, "HELLO.max size \(hello.maxWidth)x\(hello.maxHeight) must be at least 1x1")
        }
        var capabilities = Capabilities(rawValue: hello.capabilityBits).intersection(.known)
        let audioFormats = AudioFormat.allCases.filter {
            hello.audioFormatBits & $0.bit != 0 && config.audioFormats.contains($0)
        }
        if audioFormats.isEmpty { capabilities.remove(.audio) }
        let maxWidth = min(hello.maxWidth, config.maxWidth), maxHeight = min(hello.maxHeight, config.maxHeight)
        let geometry = RingGeometry(maxWidth: maxWidth, maxHeight: maxHeight, slotCount: config.slotCount)
        let sessionID = UInt64.random(in: 1...UInt64.max)
        let mapping: UnsafeRingMapping
        do {
            mapping = try UnsafeRingMapping.create(geometry: geometry, sessionID: sessionID)
        } catch {
            return refuse(.geometry, "cannot create a \(geometry.ringBytes)-byte ring: \(error)")
        }
        let welcome = Welcome(
            versionMajor: CaptureLinkProtocol.versionMajor,
            versionMinor: min(hello.versionMinor, CaptureLinkProtocol.versionMinor),
            capabilityBits: capabilities.rawValue, sessionID: sessionID, ringBytes: geometry.ringBytes,
            slotCount: geometry.slotCount, pixelFormatBits: PixelFormat.bits(formats), slotBytes: geometry.slotBytes,
            firstSlotOffset: geometry.firstSlotOffset, maxWidth: maxWidth, maxHeight: maxHeight, fps: config.fps,
            heartbeatIntervalMs: config.heartbeatIntervalMs, peerTimeoutMs: config.peerTimeoutMs)
        do {
            try socket.send(Message.welcome(welcome).encoded(), descriptors: [mapping.descriptor.rawValue])
        } catch {
            close()
            endpoint.report(.lost(reason: "could not send WELCOME: \(error)"))
            return
        }
        lastSendNs.store(MonotonicClock.nowNs(), ordering: .relaxed)
        self.mapping = mapping
        self.welcome = welcome
        acceptedFormats = Set(formats)
        acceptedAudio = capabilities.contains(.audio) ? Set(audioFormats) : []
        state = .ready
        endpoint.report(.connected(HelperInfo(
            name: hello.helperName, version: hello.helperVersion, pid: peerPid, uid: peerUid,
            protocolVersion: "\(welcome.versionMajor).\(welcome.versionMinor)", capabilities: capabilities,
            pixelFormats: formats, maxWidth: maxWidth, maxHeight: maxHeight, sessionID: sessionID)))
    }

    /// REJECT during the handshake: the helper hears why, the endpoint reports it, the session ends.
    private func refuse(_ code: ErrorCode, _ text: String) {
        send(.reject(Reason(code: code.rawValue, text: text)))
        close(lingering: true)
        endpoint.report(.rejected(code: code, reason: text))
    }

    // MARK: FRAME

    private func receiveFrame(_ frame: Frame) throws(ProtocolViolation) {
        guard let welcome else { throw ProtocolViolation(.state, "FRAME before WELCOME") }
        let unknownFlags = frame.flagBits & ~FrameFlags.known.rawValue
        guard unknownFlags == 0 else {
            throw ProtocolViolation(.reserved, "FRAME.flags has unknown bits 0x\(hex(unknownFlags))")
        }
        if frame.flags.contains(.unchanged) {
            guard frame.slot == CaptureLinkProtocol.noSlot, frame.formatCode == 0, frame.width == 0, frame.height == 0,
                  frame.planeCount == 0, frame.strides.allSatisfy({ $0 == 0 }), frame.planeOffsets.allSatisfy({ $0 == 0 })
            else {
                throw ProtocolViolation(.geometry, "an UNCHANGED FRAME must name no slot (0xFFFFFFFF) and carry "
                    + "no format, size or planes")
            }
            try checkOrder(frame)
            endpoint.report(.unchangedFrame(sequence: frame.sequence, ptsNs: frame.ptsNs))
            return
        }
        guard frame.slot < welcome.slotCount else {
            throw ProtocolViolation(.badSlot, "FRAME.slot \(frame.slot) out of range 0..\(welcome.slotCount - 1)")
        }
        let owned = slots.withLock { !$0.heldByPusher.contains(frame.slot) }
        guard owned else {
            throw ProtocolViolation(.slotNotOwned, "FRAME.slot \(frame.slot) is held by the pusher (not yet RELEASEd)")
        }
        try checkOrder(frame)
        guard let format = frame.format, acceptedFormats.contains(format) else {
            let accepted = acceptedFormats.map(\.rawValue).sorted().map(String.init).joined(separator: ", ")
            throw ProtocolViolation(.format, "FRAME.format \(frame.formatCode) is not one of the accepted [\(accepted)]")
        }
        try FrameGeometry.validate(frame, format: format, maxWidth: welcome.maxWidth, maxHeight: welcome.maxHeight,
                                   slotBytes: welcome.slotBytes)
        let info = FrameInfo(
            slot: frame.slot, format: format, sequence: frame.sequence, ptsNs: frame.ptsNs,
            width: Int(frame.width), height: Int(frame.height), flags: frame.flags,
            strides: frame.strides.prefix(format.planeCount).map { Int($0) },
            planeOffsets: frame.planeOffsets.prefix(format.planeCount).map { Int($0) })
        // Latest frame wins: the previous latest goes back to the helper unless a consumer holds it.
        let releasable: FrameInfo? = slots.withLock { slots in
            let previous = slots.latest
            slots.heldByPusher.insert(frame.slot)
            slots.latest = info
            slots.framesReceived += 1
            guard let previous, slots.borrowCount[previous.slot, default: 0] == 0 else { return nil }
            slots.heldByPusher.remove(previous.slot)
            return previous
        }
        if let releasable { send(.release(Release(slot: releasable.slot, sequence: releasable.sequence))) }
        mapping?.store(frame.sequence, at: RingHeaderField.pusherLastSequence)
        endpoint.report(.frame(info))
    }

    private func checkOrder(_ frame: Frame) throws(ProtocolViolation) {
        guard frame.sequence > lastSequence else {
            throw ProtocolViolation(.sequence, "FRAME.sequence \(frame.sequence) is not above the previous \(lastSequence)")
        }
        guard frame.ptsNs > 0, frame.ptsNs >= lastFramePtsNs else {
            throw ProtocolViolation(.sequence, "FRAME.pts_ns \(frame.ptsNs) is before the previous \(lastFramePtsNs)")
        }
        lastSequence = frame.sequence
        lastFramePtsNs = frame.ptsNs
    }

    // MARK: AUDIO

    private func receiveAudio(_ audio: Audio) throws(ProtocolViolation) {
        guard !acceptedAudio.isEmpty else {
            throw ProtocolViolation(.format, "AUDIO but no audio format was negotiated (HELLO lacked the AUDIO capability)")
        }
        guard acceptedAudio.contains(audio.format) else {
            throw ProtocolViolation(.format, "AUDIO.format \(audio.format.rawValue) was not negotiated")
        }
        guard (8000...192_000).contains(audio.rateHz) else {
            throw ProtocolViolation(.audio, "AUDIO.rate_hz \(audio.rateHz) outside 8000..192000")
        }
        guard (1...8).contains(audio.channels) else {
            throw ProtocolViolation(.audio, "AUDIO.channels \(audio.channels) outside 1..8")
        }
        guard audio.frameCount >= 1 else { throw ProtocolViolation(.audio, "AUDIO.frame_count is 0") }
        guard audio.ptsNs > 0, audio.ptsNs >= lastAudioPtsNs else {
            throw ProtocolViolation(.audio, "AUDIO.pts_ns \(audio.ptsNs) is before the previous \(lastAudioPtsNs)")
        }
        lastAudioPtsNs = audio.ptsNs
        endpoint.report(.audio(audio))
    }

    // MARK: Borrowing

    func acquireLatest() -> BorrowedFrame? {
        guard let mapping else { return nil }
        let info: FrameInfo? = slots.withLock { slots in
            guard !slots.closed, let latest = slots.latest else { return nil }
            slots.borrowCount[latest.slot, default: 0] += 1
            return latest
        }
        return info.map { BorrowedFrame(info: $0, mapping: mapping, session: self) }
    }

    /// A consumer is done with a frame: its slot returns to the helper unless it is still the latest.
    func releaseBorrowed(_ info: FrameInfo) {
        let giveBack: Bool = slots.withLock { slots in
            slots.borrowCount[info.slot, default: 1] -= 1
            guard slots.borrowCount[info.slot] == 0 else { return false }
            slots.borrowCount[info.slot] = nil
            guard slots.latest?.slot != info.slot, slots.heldByPusher.contains(info.slot) else { return false }
            slots.heldByPusher.remove(info.slot)
            return true
        }
        if giveBack {
            mapping?.store(info.sequence, at: RingHeaderField.pusherFramesConsumed)
            send(.release(Release(slot: info.slot, sequence: info.sequence)))
        }
    }
}

/// A frame lent to a consumer: its pixels are in the ring and do not change until `release()`.
/// Not thread-safe; release exactly once (a second release is ignored).
public final class BorrowedFrame: @unchecked Sendable {
    public let info: FrameInfo
    private let mapping: UnsafeRingMapping
    private weak var session: PusherSession?
    private var released = false

    init(info: FrameInfo, mapping: UnsafeRingMapping, session: PusherSession) {
        self.info = info
        self.mapping = mapping
        self.session = session
    }

    deinit { release() }

    /// The frame's planes, each from its offset to the end of its last row, inside the slot.
    public func withPlanes<R>(_ body: ([UnsafeRawBufferPointer]) throws -> R) rethrows -> R {
        let slot = UnsafeRawBufferPointer(mapping.slot(info.slot))
        let planes = (0..<info.format.planeCount).map { plane -> UnsafeRawBufferPointer in
            let extent = FrameGeometry.planeExtent(info.format, plane: plane, width: UInt64(info.width),
                                                   height: UInt64(info.height))
            let bytes = info.strides[plane] * (Int(extent.rows) - 1) + Int(extent.rowBytes)
            return UnsafeRawBufferPointer(rebasing: slot[info.planeOffsets[plane]..<info.planeOffsets[plane] + bytes])
        }
        return try body(planes)
    }

    public func release() {
        guard !released else { return }
        released = true
        session?.releaseBorrowed(info)
    }
}
