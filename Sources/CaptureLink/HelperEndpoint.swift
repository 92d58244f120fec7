import Glibc
import LinuxSystem

/// How a helper introduces itself and what it can send.
public struct HelperEndpointConfiguration: Sendable {
    public var group: String
    public var runtimeDirectory: String?
    public var helperName: String
    public var helperVersion: String
    public var pixelFormats: [PixelFormat]
    public var audioFormats: [AudioFormat] = []
    public var capabilities: Capabilities = []
    public var maxWidth: UInt32
    public var maxHeight: UInt32
    /// How long to keep trying when the pusher is not listening yet.
    public var connectRetryMs = CaptureLinkProtocol.connectRetryMsDefault

    public init(group: String, helperName: String, helperVersion: String, pixelFormats: [PixelFormat],
                maxWidth: UInt32, maxHeight: UInt32)
    {
        self.group = group
        self.helperName = helperName
        self.helperVersion = helperVersion
        self.pixelFormats = pixelFormats
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
    }
}

/// Why a helper's session could not start or had to end.
public enum HelperLinkError: Error, Equatable, CustomStringConvertible {
    case rendezvous(Rendezvous.Failure)
    case rejected(code: UInt32, text: String)
    case pusherError(code: UInt32, text: String)
    case pusherClosed
    case pusherSilent(ms: UInt64)
    case violation(ProtocolViolation)
    case system(SystemCallError)

    public var description: String {
        switch self {
        case .rendezvous(let failure): return failure.description
        case .rejected(let code, let text):
            return "the pusher refused this helper (\(ErrorCode(rawValue: code)?.name ?? "code \(code)")): \(text)"
        case .pusherError(let code, let text):
            return "the pusher reported \(ErrorCode(rawValue: code)?.name ?? "error \(code)"): \(text)"
        case .pusherClosed: return "the pusher closed the connection"
        case .pusherSilent(let ms): return "the pusher sent nothing for \(ms) ms; it is hung or gone"
        case .violation(let violation): return "the pusher broke the protocol: \(violation)"
        case .system(let error): return error.description
        }
    }
}

/// What the pusher asked of the helper, returned by `HelperEndpoint.poll`.
public enum HelperRequest: Equatable, Sendable {
    case config(Config)
    case stop(reasonCode: UInt32, text: String)
}

/// A slot the helper owns and may write a frame into.
public struct WritableSlot {
    public let index: UInt32
    public let bytes: UnsafeMutableRawBufferPointer
    /// Where the slot starts inside the ring's memfd (for xcb_shm_get_image's offset).
    public let ringOffset: UInt64
}

/// The helper's end of Capture Link: connects (with bounded retry), says HELLO, maps the ring
/// it gets in WELCOME, and then publishes frames into slots it owns. Use from one thread.
public final class HelperEndpoint {
    public let welcome: Welcome
    public private(set) var framesPublished: UInt64 = 0
    public private(set) var framesDropped: UInt64 = 0
    /// How many slots the helper owns now (the pusher's RELEASEs are read by `poll` and `acquireSlot`).
    public var ownedSlotCount: Int { ownedSlots.count }

    private let socket: SeqPacketSocket
    private let mapping: UnsafeRingMapping
    private var ownedSlots: Set<UInt32>
    private var sequence: UInt64 = 0
    private var lastSendNs = MonotonicClock.nowNs()
    private var lastReceiveNs = MonotonicClock.nowNs()
    private var finished = false

    public init(configuration: HelperEndpointConfiguration) throws(HelperLinkError) {
        let rendezvous: Rendezvous
        let fd: Int32
        do {
            rendezvous = try Rendezvous(group: configuration.group, runtimeDirectory: configuration.runtimeDirectory)
            fd = try rendezvous.connect(retryMs: configuration.connectRetryMs)
        } catch {
            throw .rendezvous(error)
        }
        socket = SeqPacketSocket(adopting: fd)
        let hello = Hello(
            pid: UInt32(getpid()), capabilities: configuration.capabilities, pixelFormats: configuration.pixelFormats,
            audioFormats: configuration.audioFormats, maxWidth: configuration.maxWidth,
            maxHeight: configuration.maxHeight, helperName: configuration.helperName,
            helperVersion: configuration.helperVersion)
        do {
            try socket.send(Message.hello(hello).encoded())
        } catch {
            throw .system(error)
        }
        let (welcome, ringDescriptor) = try Self.awaitWelcome(socket)
        let geometry = RingGeometry(slotCount: welcome.slotCount, slotBytes: welcome.slotBytes,
                                    firstSlotOffset: welcome.firstSlotOffset, ringBytes: welcome.ringBytes)
        do {
            mapping = try UnsafeRingMapping.map(descriptor: ringDescriptor, geometry: geometry)
        } catch {
            throw .system(error)
        }
        guard mapping.load(UInt32.self, at: RingHeaderField.magic) == CaptureLinkProtocol.ringMagic,
              mapping.load(UInt64.self, at: RingHeaderField.sessionID) == welcome.sessionID
        else {
            throw .violation(ProtocolViolation(.geometry, "the ring header does not match WELCOME"))
        }
        self.welcome = welcome
        ownedSlots = Set(0..<welcome.slotCount)
    }

    deinit {
        if !finished { finish(.user, text: "helper closed") }
    }

    private static func awaitWelcome(_ socket: SeqPacketSocket) throws(HelperLinkError) -> (Welcome, OwnedDescriptor) {
        var descriptorsToClose: [Int32] = []
        defer { closeAll(descriptorsToClose) }
        var ready = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&ready, 1, Int32(CaptureLinkProtocol.peerTimeoutMs)) > 0 else {
            throw .pusherSilent(ms: UInt64(CaptureLinkProtocol.peerTimeoutMs))
        }
        let received: Received
        do { received = try socket.receive(blocking: true) } catch { throw .system(error) }
        guard case .datagram(let count, let descriptors, let truncated, let controlTruncated) = received else {
            throw .pusherClosed
        }
        descriptorsToClose = descriptors
        guard !truncated, !controlTruncated else {
            throw .violation(ProtocolViolation(.truncated, "the answer to HELLO was truncated"))
        }
        let message: Message
        do {
            message = try Message.decode(socket.receivedBytes(count), descriptorCount: descriptors.count)
        } catch {
            throw .violation(error)
        }
        switch message {
        case .welcome(let welcome):
            descriptorsToClose = []
            return (welcome, OwnedDescriptor(descriptors[0]))
        case .reject(let reason):
            throw .rejected(code: reason.code, text: reason.text)
        case .error(let reason):
            throw .pusherError(code: reason.code, text: reason.text)
        default:
            throw .violation(ProtocolViolation(.state, "\(message.name) in answer to HELLO"))
        }
    }

    /// The ring's memfd, owned by the endpoint: `dup` it before handing it to anything that
    /// closes what it is given (xcb_shm_attach_fd does).
    public var ringDescriptor: Int32 { mapping.descriptor.rawValue }

    /// For a helper that never touches the pixels itself (the X server writes them into the ring
    /// through its own mapping): unmaps the slots' pages from this process (the pixels stay), so its
    /// resident and proportional memory no longer count the ring. Pages it touches later come back.
    public func releaseSlotPages() { mapping.releaseSlotPages() }

    /// Bytes of messages that crossed the socket, both ways: pixels never do, so this stays near
    /// 100 bytes a frame (FRAME, RELEASE, heartbeats) whatever the frame size.
    public var socketBytes: Int { socket.bytesSent + socket.bytesReceived }

    /// Requests read by `acquireSlot`, handed out by the next `poll`.
    private var pendingRequests: [HelperRequest] = []

    // MARK: Sending

    /// The datagram buffer every message is encoded into, kept from message to message.
    private var sendBuffer: [UInt8] = []

    private func send(_ message: Message) throws(HelperLinkError) {
        message.encode(into: &sendBuffer)
        do { try socket.send(sendBuffer) } catch { throw .system(error) }
        lastSendNs = MonotonicClock.nowNs()
    }

    /// START: capture begins; `sourceInfo` is a JSON object describing the source.
    public func start(sourceInfo: String) throws(HelperLinkError) {
        try send(.start(Start(info: sourceInfo)))
    }

    /// A slot to write the next frame into, or nil when the pusher holds them all: then the
    /// frame is dropped (and counted), as "latest frame wins" asks. Handles pending RELEASEs first.
    public func acquireSlot() throws(HelperLinkError) -> WritableSlot? {
        // A STOP or CONFIG read here is kept for the next `poll` (dropping it lost the pusher's
        // STOP: the helper went on until the pusher closed the link, and exited 1).
        pendingRequests += try poll(timeoutMs: 0)
        guard let index = ownedSlots.min() else {
            framesDropped += 1
            mapping.store(framesDropped, at: RingHeaderField.helperFramesDropped)
            return nil
        }
        return WritableSlot(index: index, bytes: mapping.slot(index), ringOffset: mapping.geometry.slotOffset(index))
    }

    /// Publishes the frame written into `slot`; the slot belongs to the pusher until it is released.
    public func publish(
        _ slot: WritableSlot, format: PixelFormat, width: UInt32, height: UInt32, strides: [UInt32],
        planeOffsets: [UInt32], ptsNs: UInt64 = MonotonicClock.nowNs(), flags: FrameFlags = []
    ) throws(HelperLinkError) {
        precondition(ownedSlots.contains(slot.index), "publish: slot \(slot.index) is not owned by the helper")
        sequence += 1
        let frame = Frame(slot: slot.index, format: format, sequence: sequence, ptsNs: ptsNs, width: width,
                          height: height, flags: flags, strides: strides, planeOffsets: planeOffsets)
        ownedSlots.remove(slot.index)
        try send(.frame(frame))
        framesPublished += 1
        mapping.store(framesPublished, at: RingHeaderField.helperFramesPublished)
    }

    /// Tells the pusher nothing changed since the last frame.
    public func publishUnchanged(ptsNs: UInt64 = MonotonicClock.nowNs()) throws(HelperLinkError) {
        sequence += 1
        try send(.frame(.unchanged(sequence: sequence, ptsNs: ptsNs)))
    }

    public func sendAudio(_ audio: Audio) throws(HelperLinkError) { try send(.audio(audio)) }

    public func pause(_ reason: PauseReason) throws(HelperLinkError) { try send(.pause(reasonCode: reason.rawValue)) }

    public func resume() throws(HelperLinkError) { try send(.resume) }

    /// FINISH and close. Errors are ignored: the pusher may already be gone.
    public func finish(_ reason: FinishReason, text: String) {
        guard !finished else { return }
        finished = true
        try? socket.send(Message.finish(Reason(code: reason.rawValue, text: text)).encoded())
        socket.close()
    }

    // MARK: Receiving

    /// Handles what the pusher sent, waiting up to `timeoutMs` for the first message; sends a
    /// heartbeat when due. Returns the pusher's requests (CONFIG, STOP) in order.
    public func poll(timeoutMs: Int) throws(HelperLinkError) -> [HelperRequest] {
        var requests = pendingRequests
        pendingRequests = []
        var ready = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
        if Glibc.poll(&ready, 1, requests.isEmpty ? Int32(timeoutMs) : 0) > 0 {
            while true {
                let received: Received
                do { received = try socket.receive(blocking: false) } catch { throw .system(error) }
                switch received {
                case .wouldBlock:
                    break
                case .endOfStream:
                    // Hand over what came before the end (a STOP, typically) first.
                    if requests.isEmpty { throw .pusherClosed }
                    return requests
                case .datagram(let count, let descriptors, let truncated, let controlTruncated):
                    closeAll(descriptors)
                    lastReceiveNs = MonotonicClock.nowNs()
                    guard !truncated, !controlTruncated else {
                        throw .violation(ProtocolViolation(.truncated, "a message from the pusher was truncated"))
                    }
                    let message: Message
                    do {
                        message = try Message.decode(socket.receivedBytes(count), descriptorCount: descriptors.count)
                    } catch {
                        throw .violation(error)
                    }
                    if let request = try handle(message) { requests.append(request) }
                    continue
                }
                break
            }
        }
        let nowNs = MonotonicClock.nowNs()
        let silentMs = (nowNs - lastReceiveNs) / 1_000_000
        if silentMs >= UInt64(welcome.peerTimeoutMs) { throw .pusherSilent(ms: silentMs) }
        if (nowNs - lastSendNs) / 1_000_000 >= UInt64(welcome.heartbeatIntervalMs) {
            try send(.heartbeat(Heartbeat(timeNs: nowNs, framesSent: framesPublished, framesDropped: framesDropped)))
        }
        return requests
    }

    private func handle(_ message: Message) throws(HelperLinkError) -> HelperRequest? {
        switch message {
        case .release(let release):
            guard release.slot < welcome.slotCount, !ownedSlots.contains(release.slot) else {
                throw .violation(ProtocolViolation(.badSlot, "RELEASE of slot \(release.slot), which the helper owns"))
            }
            ownedSlots.insert(release.slot)
            return nil
        case .config(let config):
            return .config(config)
        case .stop(let reason):
            return .stop(reasonCode: reason.code, text: reason.text)
        case .error(let reason):
            throw .pusherError(code: reason.code, text: reason.text)
        case .heartbeat, .ignoredOptional:
            return nil
        default:
            throw .violation(ProtocolViolation(.state, "\(message.name) from the pusher during a session"))
        }
    }
}
