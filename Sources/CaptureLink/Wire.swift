/// Capture Link v1 constants, as protocol/livepush_capture.h and protocol/SPEC.md define them.
public enum CaptureLinkProtocol {
    public static let versionMajor: UInt16 = 1
    public static let versionMinor: UInt16 = 0
    /// 'L' 'P' 'C' 'L' in memory.
    public static let messageMagic: UInt32 = 0x4C43_504C
    public static let headerBytes = 16
    public static let messageMaxBytes = 65536
    public static let textMaxBytes = 1024
    public static let startInfoMaxBytes = 4096
    public static let nameBytes = 32
    public static let versionBytes = 16
    public static let heartbeatIntervalMs: UInt32 = 1000
    public static let peerTimeoutMs: UInt32 = 3000
    public static let connectRetryMsDefault = 10_000
    public static let minSlots: UInt32 = 3
    public static let maxSlots: UInt32 = 4
    /// 'L' 'R' 'N' 'G' in memory.
    public static let ringMagic: UInt32 = 0x474E_524C
    public static let ringHeaderBytes = 4096
    public static let noSlot: UInt32 = 0xFFFF_FFFF
    /// The largest number of descriptors a receiver makes room for; more arrive as MSG_CTRUNC.
    public static let maxDescriptorsPerMessage = 4
}

public enum MessageType: UInt16, Sendable, CaseIterable {
    case hello = 0x0001
    case start = 0x0002
    case frame = 0x0003
    case audio = 0x0004
    case pause = 0x0005
    case resume = 0x0006
    case finish = 0x0007
    case heartbeat = 0x0040
    case welcome = 0x0081
    case reject = 0x0082
    case release = 0x0083
    case config = 0x0084
    case stop = 0x0085
    case error = 0x0086
}

/// Header flag: a receiver that does not know the message type ignores the message.
public let messageFlagOptional: UInt16 = 0x0001

/// The error codes of ERROR and REJECT, one per rule of the protocol.
public enum ErrorCode: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    case badMagic = 1
    case badLength = 2
    case unknownType = 3
    case version = 4
    case state = 5
    case badSlot = 6
    case slotNotOwned = 7
    case sequence = 8
    case geometry = 9
    case format = 10
    case descriptors = 11
    case truncated = 12
    case peerUid = 13
    case busy = 14
    case timeout = 15
    case audio = 16
    case text = 17
    case reserved = 18

    /// The name the specification uses, as `BAD_SLOT`.
    public var name: String {
        switch self {
        case .badMagic: return "BAD_MAGIC"
        case .badLength: return "BAD_LENGTH"
        case .unknownType: return "UNKNOWN_TYPE"
        case .version: return "VERSION"
        case .state: return "STATE"
        case .badSlot: return "BAD_SLOT"
        case .slotNotOwned: return "SLOT_NOT_OWNED"
        case .sequence: return "SEQUENCE"
        case .geometry: return "GEOMETRY"
        case .format: return "FORMAT"
        case .descriptors: return "DESCRIPTORS"
        case .truncated: return "TRUNCATED"
        case .peerUid: return "PEER_UID"
        case .busy: return "BUSY"
        case .timeout: return "TIMEOUT"
        case .audio: return "AUDIO"
        case .text: return "TEXT"
        case .reserved: return "RESERVED"
        }
    }

    public var description: String { name }
}

public enum PixelFormat: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    case bgrx = 1
    case bgra = 2
    case rgbx = 3
    case rgba = 4
    case nv12 = 5
    case i420 = 6

    /// The bit of this format in HELLO and WELCOME's format sets.
    public var bit: UInt32 { 1 << rawValue }

    public var planeCount: Int {
        switch self {
        case .bgrx, .bgra, .rgbx, .rgba: return 1
        case .nv12: return 2
        case .i420: return 3
        }
    }

    public var isPacked: Bool { planeCount == 1 }

    public var description: String {
        switch self {
        case .bgrx: return "BGRx"
        case .bgra: return "BGRA"
        case .rgbx: return "RGBx"
        case .rgba: return "RGBA"
        case .nv12: return "NV12"
        case .i420: return "I420"
        }
    }

    /// The formats named by a set of format bits.
    public static func set(_ bits: UInt32) -> [PixelFormat] { allCases.filter { bits & $0.bit != 0 } }

    public static func bits(_ formats: [PixelFormat]) -> UInt32 { formats.reduce(0) { $0 | $1.bit } }
}

public enum AudioFormat: UInt32, Sendable, CaseIterable {
    case s16le = 1
    case f32le = 2

    public var bit: UInt32 { 1 << rawValue }
    public var bytesPerSample: Int { self == .s16le ? 2 : 4 }
}

/// Capability bits of HELLO and WELCOME.
public struct Capabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The helper may send AUDIO.
    public static let audio = Capabilities(rawValue: 0x1)
    /// The helper marks frames in which nothing changed.
    public static let damage = Capabilities(rawValue: 0x2)
    /// The helper can composite the cursor.
    public static let cursor = Capabilities(rawValue: 0x4)
    /// The helper scales its frames to fit CONFIG's maximum, keeping the aspect ratio, and never
    /// crops (SPEC clarification 28): a smaller CONFIG makes it grab less, not cut the picture.
    public static let scale = Capabilities(rawValue: 0x8)

    public static let known: Capabilities = [.audio, .damage, .cursor, .scale]
}

/// FRAME flag bits.
public struct FrameFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Nothing changed since the previous frame: no slot, the pusher repeats its last frame.
    public static let unchanged = FrameFlags(rawValue: 0x1)
    /// The cursor is composited into the pixels.
    public static let cursor = FrameFlags(rawValue: 0x2)
    /// The first frame with a new format or size.
    public static let formatChanged = FrameFlags(rawValue: 0x4)

    public static let known: FrameFlags = [.unchanged, .cursor, .formatChanged]
}

public enum PauseReason: UInt32, Sendable, CustomStringConvertible {
    case screenLocked = 1
    case sourceHidden = 2
    case requested = 3

    /// The name the specification uses, as `SCREEN_LOCKED`.
    public var name: String {
        switch self {
        case .screenLocked: "SCREEN_LOCKED"
        case .sourceHidden: "SOURCE_HIDDEN"
        case .requested: "REQUESTED"
        }
    }

    public var description: String {
        switch self {
        case .screenLocked: "the screen is locked"
        case .sourceHidden: "the captured window is minimised or off-screen"
        case .requested: "the helper's user paused it"
        }
    }

    /// A PAUSE's reason for a person: `the screen is locked (SCREEN_LOCKED, 1)`, or for a code
    /// this pusher does not know, `reason 7` (SPEC §5.5: shown as its number).
    public static func describe(code: UInt32) -> String {
        guard let reason = PauseReason(rawValue: code) else { return "reason \(code)" }
        return "\(reason) (\(reason.name), \(code))"
    }
}

public enum FinishReason: UInt32, Sendable, CustomStringConvertible {
    case user = 1
    case sourceClosed = 2
    case sourceLost = 3
    case error = 4
    case restarting = 5
    /// A planned end: the helper did what it was asked to (SPEC §5.7).
    case done = 6

    public var description: String {
        switch self {
        case .user: return "stopped by the helper's user"
        case .sourceClosed: return "the captured source was closed"
        case .sourceLost: return "the display server or PipeWire went away"
        case .error: return "the helper failed"
        case .restarting: return "the helper is restarting"
        case .done: return "the helper finished its planned work"
        }
    }

    /// The name the specification uses, as `SOURCE_CLOSED`.
    public var name: String {
        switch self {
        case .user: "USER"
        case .sourceClosed: "SOURCE_CLOSED"
        case .sourceLost: "SOURCE_LOST"
        case .error: "ERROR"
        case .restarting: "RESTARTING"
        case .done: "DONE"
        }
    }

    /// A FINISH's reason for a person: `the captured source was closed (SOURCE_CLOSED, 2)`, or
    /// for a code this pusher does not know, `reason 99` (SPEC §5.7, §14.4: shown as its number).
    public static func describe(code: UInt32) -> String {
        guard let reason = FinishReason(rawValue: code) else { return "reason \(code)" }
        return "\(reason) (\(reason.name), \(code))"
    }

    /// USER, DONE and SOURCE_CLOSED: the ends a helper plans (SPEC §5.7, §12.9).
    public var isPlanned: Bool { self == .user || self == .done || self == .sourceClosed }
}

public enum StopReason: UInt32, Sendable {
    case user = 1
    case pusherExiting = 2
}

/// CONFIG flag: composite the cursor.
public let configFlagCursor: UInt32 = 0x1
