import CLinuxShim
import Glibc
import LinuxSystem
import SafeText
import Synchronization

// MARK: - One helper's session

/// The state of one connected helper.
///
/// Threads: the link thread owns the session's state (`state`, the timers, the checks of what
/// arrives) and is the only one that reads or writes it. Other threads reach the session through
/// three doors only: `slots` (slot ownership, the latest frame and the ring mapping, under one
/// lock, for the consumers that borrow frames), `outbox` (sending, never blocking: RELEASEs from
/// the video thread, CONFIG from any thread) and `requests` (a stop or an ERROR asked from any
/// thread, carried out by the link thread on its next turn).
final class PusherSession: @unchecked Sendable {
    enum State { case awaitingHello, ready, capturing, paused, closed }

    struct Slots {
        /// The ring, set on the link thread at WELCOME and read by consumers (under the lock).
        var mapping: UnsafeRingMapping?
        /// Slots the pusher holds; the rest belong to the helper.
        var heldByPusher: Set<UInt32> = []
        /// The sequence of the frame in each held slot (for RELEASE).
        var heldSequences: [UInt32: UInt64] = [:]
        var borrowCount: [UInt32: Int] = [:]
        var latest: FrameInfo?
        var framesReceived: UInt64 = 0
        var closed = false
    }

    let socket: SeqPacketSocket
    let peerPid: Int32
    let peerUid: UInt32
    private unowned let endpoint: PusherEndpoint
    /// Link thread only.
    private var state = State.awaitingHello
    /// HELLO's name, neutralised (SPEC §2.3); link thread only.
    private(set) var helperName = "(before HELLO)"
    private var welcome: Welcome?
    private var acceptedFormats: Set<PixelFormat> = []
    private var acceptedAudio: Set<AudioFormat> = []
    private var lastSequence: UInt64 = 0
    private var lastFramePtsNs: UInt64 = 0
    private var lastAudioPtsNs: UInt64 = 0
    private var lastReceiveNs = MonotonicClock.nowNs()
    /// When the STOP grace ends (0: no STOP sent); link thread only.
    private var stopDeadlineNs: UInt64 = 0
    private let slots = Mutex(Slots())
    /// What the pusher sends this helper, never blocking (SPEC §4.1).
    let outbox: HelperOutbox
    /// Requests from other threads, carried out on the link thread's next turn.
    private struct Requests {
        /// The STOP asked for, kept until it can be sent (after WELCOME: SPEC §12.8).
        var stop: Reason?
        /// When STOP was sent (the link thread starts the grace from it).
        var stopSentNs: UInt64?
        var error: Reason?
    }
    /// Set on the link thread once WELCOME is sent: from then on a STOP may go out at once.
    private let welcomed = Atomic<Bool>(false)
    /// Set by the first STOP sent: there is never a second.
    private let stopSent = Atomic<Bool>(false)
    private let requests = Mutex(Requests())
    /// Probes of `livepush check-helper` (PusherEndpoint's probe methods): keep every slot.
    let withholdingReleases = Atomic<Bool>(false)
    /// Future timestamps replaced by the arrival time (SPEC §9), and the warnings about them.
    private var clock = TimestampCheck()

    init(socket: SeqPacketSocket, peer: (pid: pid_t, uid: uid_t), endpoint: PusherEndpoint) {
        self.socket = socket
        self.peerPid = peer.pid
        self.peerUid = peer.uid
        self.endpoint = endpoint
        outbox = HelperOutbox(socket: socket) { [unowned endpoint] in endpoint.wake() }
    }

    /// Link thread only.
    var isClosed: Bool { state == .closed }

    /// Sends `message` without waiting (any thread; see `HelperOutbox`).
    func send(_ message: Message) { outbox.send(message) }

    func sendBytes(_ bytes: [UInt8]) { outbox.send(bytes: bytes) }

    /// Gives back every slot kept while releases were withheld, except the newest frame's.
    func releaseWithheld() {
        let released: [(slot: UInt32, sequence: UInt64)] = slots.withLock { slots in
            let keep = slots.latest?.slot
            let free = slots.heldSequences.filter { $0.key != keep && slots.borrowCount[$0.key, default: 0] == 0 }
            for (slot, _) in free {
                slots.heldByPusher.remove(slot)
                slots.heldSequences[slot] = nil
            }
            return free.map { (slot: $0.key, sequence: $0.value) }
        }
        for (slot, sequence) in released { send(.release(Release(slot: slot, sequence: sequence))) }
    }

    /// Asks the helper to stop, from any thread: STOP goes out now if the helper was welcomed,
    /// else right after WELCOME (a STOP before WELCOME is a violation, SPEC §12.8); the outbox
    /// sends nothing once the session is closed. The link thread starts the 1 s grace.
    func askToStop(reason: StopReason, text: String) {
        requests.withLock { if $0.stop == nil { $0.stop = Reason(code: reason.rawValue, text: text) } }
        if welcomed.load(ordering: .acquiring) { sendStopOnce() }
    }

    /// Sends the STOP asked for, once.
    private func sendStopOnce() {
        guard let stop = requests.withLock({ $0.stop }), !stopSent.exchange(true, ordering: .acquiringAndReleasing)
        else { return }
        send(.stop(stop))
        let sentNs = MonotonicClock.nowNs()
        requests.withLock { $0.stopSentNs = sentNs }
    }

    /// Ends the session with ERROR {code, text} on the link thread's next turn (check-helper's probe).
    func askToFail(_ reason: Reason) {
        requests.withLock { $0.error = reason }
    }

    /// Sends STOP and starts the grace (link thread).
    func stop(reason: StopReason, text: String) {
        guard state != .closed else { return }
        askToStop(reason: reason, text: text)
        if stopDeadlineNs == 0 { stopDeadlineNs = MonotonicClock.nowNs() + 1_000_000_000 }
    }

    /// True when the session ended by sending the helper a reason (ERROR, REJECT): the
    /// endpoint then keeps the socket open briefly so that the helper can read it.
    private(set) var lingers = false

    /// Closes the connection. Borrowed frames keep the ring mapped until they are released.
    func close(lingering: Bool = false) {
        state = .closed
        outbox.close()
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

    /// The maximum size of the last CONFIG sent.
    private var sentMaxSize: (width: UInt32, height: UInt32)?

    /// The size CONFIG asks for: the endpoint's wish within WELCOME's maximum when the helper
    /// was granted LPC_CAP_SCALE (SPEC clarification 28), WELCOME's maximum otherwise.
    private func configMaxSize(_ welcome: Welcome) -> (width: UInt32, height: UInt32) {
        let full = (width: welcome.maxWidth, height: welcome.maxHeight)
        guard Capabilities(rawValue: welcome.capabilityBits).contains(.scale),
              let wanted = endpoint.wantedMaxSize.withLock({ $0 })
        else { return full }
        return (max(1, min(wanted.width, full.width)), max(1, min(wanted.height, full.height)))
    }

    /// Sends CONFIG after START (`force`) and whenever the wanted size changed while capturing.
    private func sendConfigIfChanged(force: Bool = false) {
        guard let welcome, state == .capturing || state == .paused else { return }
        let size = configMaxSize(welcome)
        guard force || sentMaxSize.map({ $0 != size }) ?? true else { return }
        sentMaxSize = size
        send(.config(Config(fps: welcome.fps, maxWidth: size.width, maxHeight: size.height,
                            cursor: Capabilities(rawValue: welcome.capabilityBits).contains(.cursor))))
    }

    func tick(nowNs: UInt64) {
        guard state != .closed else { return }
        outbox.flush()
        sendConfigIfChanged()
        let config = endpoint.configuration
        if welcomed.load(ordering: .relaxed) { sendStopOnce() }
        let asked = requests.withLock { asked in
            defer { (asked.error, asked.stopSentNs) = (nil, nil) }
            return asked
        }
        if let reason = asked.error {
            outbox.sendLast(.error(reason))
            close(lingering: true)
            endpoint.report(.lost(reason: "the pusher sent ERROR \(reason.code): \(reason.text)"))
            return
        }
        if let sentNs = asked.stopSentNs, stopDeadlineNs == 0 { stopDeadlineNs = sentNs + 1_000_000_000 }
        if stopDeadlineNs != 0 && nowNs >= stopDeadlineNs {
            close()
            endpoint.report(.lost(reason: "helper did not finish within 1 s of STOP"))
            return
        }
        let silentMs = (nowNs &- lastReceiveNs) / 1_000_000
        if silentMs >= UInt64(config.peerTimeoutMs) {
            hung("no message for \(silentMs) ms (limit \(config.peerTimeoutMs) ms)")
            return
        }
        // SPEC §4.1: a helper that reads nothing is hung too, once its socket stayed full that long.
        if let fullMs = outbox.fullForMs(nowNs: nowNs), fullMs >= UInt64(config.peerTimeoutMs) {
            hung(fullMs == .max
                ? "it read none of the pusher's messages: more than \(HelperOutbox.maxWaiting) wait to be sent"
                : "it read none of the pusher's messages for \(fullMs) ms (limit \(config.peerTimeoutMs) ms): "
                    + "its socket is full, \(outbox.waitingCount) messages wait")
            return
        }
        if state != .awaitingHello,
           (nowNs &- outbox.lastSendNs.load(ordering: .relaxed)) / 1_000_000 >= UInt64(config.heartbeatIntervalMs)
        {
            let consumed = slots.withLock { $0.framesReceived }
            send(.heartbeat(Heartbeat(timeNs: nowNs, framesSent: consumed, framesDropped: 0)))
        }
    }

    /// ERROR {TIMEOUT}, disconnect, and the helper reported lost (SPEC §11, §4.1).
    private func hung(_ text: String) {
        outbox.sendLast(.error(Reason(code: ErrorCode.timeout.rawValue, text: "helper hung: " + text)))
        close(lingering: true)
        endpoint.report(.lost(reason: "helper hung: \(text)"))
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
        // A detail may quote what the helper sent (START's info): neutralised (SPEC §2.3) for our
        // user and for the helper's, and short enough for ERROR's 1024 bytes.
        let shown = ProtocolViolation(violation.code, UntrustedText.neutralised(violation.detail, maxScalars: 200))
        outbox.sendLast(.error(Reason(code: shown.code.rawValue, text: shown.detail)))
        close(lingering: true)
        endpoint.report(.violation(shown, message: message))
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
            endpoint.report(.finished(reasonCode: reason.code, text: UntrustedText.neutralised(reason.text)))
        case (_, .error(let reason)):
            close()
            let name = ErrorCode(rawValue: reason.code)?.name ?? "code \(reason.code)"
            endpoint.report(.lost(reason: "helper reported \(name): \(UntrustedText.neutralised(reason.text))"))
        case (.ready, .start(let start)):
            try checkSourceInfo(start.info)
            state = .capturing
            endpoint.report(.started(sourceInfo: UntrustedText.neutralised(start.info, maxScalars: 600)))
            // SPEC §12.3 step 6: what the pusher wants, right after START.
            sendConfigIfChanged(force: true)
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
        guard SourceInfoSyntax.isJSONObject(info) else {
            throw ProtocolViolation(.text, "START.info is not a JSON object: \(info.prefix(80))")
        }
    }

    // MARK: HELLO -> WELCOME

    private func welcomeHelper(_ hello: Hello) throws(ProtocolViolation) {
        helperName = UntrustedText.neutralised(hello.helperName)
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
            // The first message of a fresh socket: it has room (and if not, this helper is gone).
            guard try socket.sendWithoutWaiting(Message.welcome(welcome).encoded(),
                                                descriptors: [mapping.descriptor.rawValue])
            else { throw SystemCallError("sendmsg", errno: EAGAIN) }
        } catch {
            close()
            endpoint.report(.lost(reason: "could not send WELCOME: \(error)"))
            return
        }
        outbox.lastSendNs.store(MonotonicClock.nowNs(), ordering: .relaxed)
        welcomed.store(true, ordering: .releasing)
        slots.withLock { $0.mapping = mapping }
        self.welcome = welcome
        acceptedFormats = Set(formats)
        acceptedAudio = capabilities.contains(.audio) ? Set(audioFormats) : []
        state = .ready
        endpoint.report(.connected(HelperInfo(
            name: helperName, version: UntrustedText.neutralised(hello.helperVersion), pid: peerPid, uid: peerUid,
            protocolVersion: "\(welcome.versionMajor).\(welcome.versionMinor)", capabilities: capabilities,
            pixelFormats: formats, maxWidth: maxWidth, maxHeight: maxHeight, sessionID: sessionID,
            helloMaxWidth: hello.maxWidth, helloMaxHeight: hello.maxHeight)))
    }

    /// REJECT during the handshake: the helper hears why, the endpoint reports it, the session ends.
    private func refuse(_ code: ErrorCode, _ text: String) {
        outbox.sendLast(.reject(Reason(code: code.rawValue, text: text)))
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
            endpoint.report(.unchangedFrame(sequence: frame.sequence, ptsNs: plausible(frame.ptsNs, "FRAME")))
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
            slot: frame.slot, format: format, sequence: frame.sequence, ptsNs: plausible(frame.ptsNs, "FRAME"),
            width: Int(frame.width), height: Int(frame.height), flags: frame.flags,
            strides: frame.strides.prefix(format.planeCount).map { Int($0) },
            planeOffsets: frame.planeOffsets.prefix(format.planeCount).map { Int($0) })
        // Latest frame wins: the previous latest goes back to the helper unless a consumer holds it.
        let withholding = withholdingReleases.load(ordering: .relaxed)
        let releasable: FrameInfo? = slots.withLock { slots in
            let previous = slots.latest
            slots.heldByPusher.insert(frame.slot)
            slots.heldSequences[frame.slot] = frame.sequence
            slots.latest = info
            slots.framesReceived += 1
            guard let previous, !withholding, slots.borrowCount[previous.slot, default: 0] == 0 else { return nil }
            slots.heldByPusher.remove(previous.slot)
            slots.heldSequences[previous.slot] = nil
            return previous
        }
        if let releasable { send(.release(Release(slot: releasable.slot, sequence: releasable.sequence))) }
        slots.withLock { $0.mapping }?.store(frame.sequence, at: RingHeaderField.pusherLastSequence)
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
        var placed = audio
        placed.ptsNs = plausible(audio.ptsNs, "AUDIO")
        endpoint.report(.audio(placed))
    }

    /// A timestamp more than 1 s ahead of the pusher's clock is the helper's clock problem (SPEC
    /// §9, decision 20): the arrival time replaces it, and a warning says so (rate-limited). The
    /// order checks keep the helper's own values.
    private func plausible(_ ptsNs: UInt64, _ message: String) -> UInt64 {
        let nowNs = MonotonicClock.nowNs()
        guard ptsNs > nowNs &+ TimestampCheck.aheadLimitNs else { return ptsNs }
        if let warning = clock.replaced(message, aheadNs: ptsNs - nowNs, nowNs: nowNs) {
            endpoint.report(.implausibleTimestamp(warning))
        }
        return nowNs
    }

    // MARK: Borrowing

    func acquireLatest() -> BorrowedFrame? {
        let borrowed: (FrameInfo, UnsafeRingMapping)? = slots.withLock { slots in
            guard !slots.closed, let mapping = slots.mapping, let latest = slots.latest else { return nil }
            slots.borrowCount[latest.slot, default: 0] += 1
            return (latest, mapping)
        }
        return borrowed.map { BorrowedFrame(info: $0.0, mapping: $0.1, session: self) }
    }

    /// A consumer is done with a frame: its slot returns to the helper unless it is still the latest.
    /// `consumed`: the consumer will not read this frame again, so when it is still the latest and
    /// nobody else borrows it, it stops being the latest and its slot returns now (see
    /// `BorrowedFrame.releaseConsumed`).
    func releaseBorrowed(_ info: FrameInfo, consumed: Bool = false) {
        let withholding = withholdingReleases.load(ordering: .relaxed)
        let giveBack: UnsafeRingMapping? = slots.withLock { slots in
            slots.borrowCount[info.slot, default: 1] -= 1
            guard slots.borrowCount[info.slot] == 0 else { return nil }
            slots.borrowCount[info.slot] = nil
            if consumed, slots.latest?.sequence == info.sequence { slots.latest = nil }
            guard !withholding, slots.latest?.slot != info.slot, slots.heldByPusher.contains(info.slot) else {
                return nil
            }
            slots.heldByPusher.remove(info.slot)
            slots.heldSequences[info.slot] = nil
            return slots.mapping
        }
        if let mapping = giveBack {
            mapping.store(info.sequence, at: RingHeaderField.pusherFramesConsumed)
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
        mapping.readingSlot(info.slot)
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

    /// Releases a frame its consumer has read for good (the video pipeline, once converted): when it
    /// is still the newest frame it is no longer kept as the latest (`acquireLatestFrame` then returns
    /// nil until the next FRAME), and its slot goes back to the helper now rather than when the next
    /// frame arrives. The helper takes the lowest free slot, so it then writes every frame into the
    /// same slot, and the pusher maps one slot's pages instead of the ring's (`readingSlot`).
    public func releaseConsumed() {
        guard !released else { return }
        released = true
        session?.releaseBorrowed(info, consumed: true)
    }
}
