/// Who connected: what the helper said in HELLO, checked against the kernel's word for its pid and uid.
public struct HelperInfo: Equatable, Sendable {
    public let name: String
    public let version: String
    /// From SO_PEERCRED, not from HELLO.
    public let pid: Int32
    public let uid: UInt32
    public let protocolVersion: String
    public let capabilities: Capabilities
    public let pixelFormats: [PixelFormat]
    /// The maximum size granted in WELCOME (HELLO's, capped by the pusher's limit).
    public let maxWidth: UInt32
    public let maxHeight: UInt32
    public let sessionID: UInt64
    /// The maximum size HELLO asked for.
    public var helloMaxWidth: UInt32 = 0
    public var helloMaxHeight: UInt32 = 0
}

/// The description of a frame the helper published.
public struct FrameInfo: Equatable, Sendable {
    public let slot: UInt32
    public let format: PixelFormat
    public let sequence: UInt64
    public let ptsNs: UInt64
    public let width: Int
    public let height: Int
    public let flags: FrameFlags
    public let strides: [Int]
    public let planeOffsets: [Int]
}

/// What happens on a pusher endpoint, in order, on its link thread.
public enum CaptureLinkEvent: Sendable {
    /// A helper said HELLO and got WELCOME.
    case connected(HelperInfo)
    /// The helper sent START with its source description (a JSON object).
    case started(sourceInfo: String)
    /// A new frame is available: `PusherEndpoint.acquireLatestFrame()` borrows the newest one.
    case frame(FrameInfo)
    /// Nothing changed on screen: repeat the last frame.
    case unchangedFrame(sequence: UInt64, ptsNs: UInt64)
    case audio(Audio)
    case paused(reasonCode: UInt32)
    case resumed
    /// The helper ended the session with FINISH. Every text in an event that came from the
    /// helper (names, FINISH and ERROR texts, START's info, what a violation quotes) has its
    /// control characters escaped and its length capped (SPEC §2.3, `UntrustedText`).
    case finished(reasonCode: UInt32, text: String)
    /// The helper went away without FINISH: exited, crashed, hung, or reported an error.
    case lost(reason: String)
    /// The helper broke a rule; it got ERROR and was disconnected. `message` is the start of
    /// the offending datagram (at most 64 bytes), empty when the rule is not about one message.
    case violation(ProtocolViolation, message: [UInt8])
    /// A helper was turned away before a session began (busy, version, uid, formats). Many at
    /// once are reported as a few: see `PusherEndpoint`'s `RefusalLimiter`.
    case rejected(code: ErrorCode, reason: String)
    /// A FRAME or AUDIO timestamp more than 1 s ahead of the pusher's clock was replaced by its
    /// arrival time (SPEC §9); rate-limited (`TimestampCheck`).
    case implausibleTimestamp(ImplausibleTimestamp)
}
