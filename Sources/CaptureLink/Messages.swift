/// The messages of Capture Link v1 as Swift values, with their exact wire encoding.
///
/// Decoding checks everything a message can be checked for on its own (framing, sizes,
/// reserved fields, text); the session checks what needs the negotiated state (slots,
/// formats, geometry, sequence).

/// HELLO: the helper introduces itself.
public struct Hello: Equatable, Sendable {
    public var versionMajor: UInt16 = CaptureLinkProtocol.versionMajor
    public var versionMinor: UInt16 = CaptureLinkProtocol.versionMinor
    public var pid: UInt32
    /// Capability bits, possibly with bits this version does not know.
    public var capabilityBits: UInt32
    public var pixelFormatBits: UInt32
    public var audioFormatBits: UInt32
    public var maxWidth: UInt32
    public var maxHeight: UInt32
    public var helperName: String
    public var helperVersion: String

    public init(
        pid: UInt32, capabilities: Capabilities, pixelFormats: [PixelFormat], audioFormats: [AudioFormat] = [],
        maxWidth: UInt32, maxHeight: UInt32, helperName: String, helperVersion: String
    ) {
        self.pid = pid
        self.capabilityBits = capabilities.rawValue
        self.pixelFormatBits = PixelFormat.bits(pixelFormats)
        self.audioFormatBits = audioFormats.reduce(0) { $0 | $1.bit }
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
        self.helperName = helperName
        self.helperVersion = helperVersion
    }

    static let payloadBytes = 80
}

/// START: capture begins; `info` is a JSON object describing the source.
public struct Start: Equatable, Sendable {
    public var info: String
    public init(info: String) { self.info = info }
}

/// FRAME: a slot the helper filled now belongs to the pusher (or, with `unchanged`, no slot).
public struct Frame: Equatable, Sendable {
    public var slot: UInt32
    /// A `PixelFormat` raw value; checked by the session against the negotiated set.
    public var formatCode: UInt32
    public var sequence: UInt64
    public var ptsNs: UInt64
    public var width: UInt32
    public var height: UInt32
    public var flagBits: UInt32
    public var planeCount: UInt32
    public var strides: [UInt32]
    public var planeOffsets: [UInt32]

    public init(
        slot: UInt32, format: PixelFormat, sequence: UInt64, ptsNs: UInt64, width: UInt32, height: UInt32,
        flags: FrameFlags = [], strides: [UInt32], planeOffsets: [UInt32]
    ) {
        precondition(strides.count == format.planeCount && planeOffsets.count == format.planeCount)
        self.slot = slot
        self.formatCode = format.rawValue
        self.sequence = sequence
        self.ptsNs = ptsNs
        self.width = width
        self.height = height
        self.flagBits = flags.rawValue
        self.planeCount = UInt32(format.planeCount)
        self.strides = strides + Array(repeating: 0, count: 3 - strides.count)
        self.planeOffsets = planeOffsets + Array(repeating: 0, count: 3 - planeOffsets.count)
    }

    /// A frame in which nothing changed: no slot, no geometry.
    public static func unchanged(sequence: UInt64, ptsNs: UInt64, flags: FrameFlags = []) -> Frame {
        Frame(raw: (CaptureLinkProtocol.noSlot, 0, sequence, ptsNs, 0, 0, (flags.union(.unchanged)).rawValue, 0),
              strides: [0, 0, 0], planeOffsets: [0, 0, 0])
    }

    init(raw: (UInt32, UInt32, UInt64, UInt64, UInt32, UInt32, UInt32, UInt32), strides: [UInt32], planeOffsets: [UInt32]) {
        (slot, formatCode, sequence, ptsNs, width, height, flagBits, planeCount) = raw
        self.strides = strides
        self.planeOffsets = planeOffsets
    }

    public var flags: FrameFlags { FrameFlags(rawValue: flagBits) }
    public var format: PixelFormat? { PixelFormat(rawValue: formatCode) }

    static let payloadBytes = 64
}

/// AUDIO: interleaved PCM of desktop or application audio.
public struct Audio: Equatable, Sendable {
    public var format: AudioFormat
    public var rateHz: UInt32
    public var channels: UInt16
    public var frameCount: UInt32
    public var ptsNs: UInt64
    public var pcm: [UInt8]

    public init(format: AudioFormat, rateHz: UInt32, channels: UInt16, ptsNs: UInt64, pcm: [UInt8]) {
        self.format = format
        self.rateHz = rateHz
        self.channels = channels
        self.frameCount = UInt32(pcm.count / max(1, Int(channels) * format.bytesPerSample))
        self.ptsNs = ptsNs
        self.pcm = pcm
    }

    static let fixedBytes = 24
}

/// FINISH, STOP, REJECT and ERROR: a code and a human-readable text.
public struct Reason: Equatable, Sendable {
    public var code: UInt32
    public var text: String
    public init(code: UInt32, text: String) {
        self.code = code
        self.text = text
    }
}

public struct Heartbeat: Equatable, Sendable {
    public var timeNs: UInt64
    public var framesSent: UInt64
    public var framesDropped: UInt64
    public init(timeNs: UInt64, framesSent: UInt64, framesDropped: UInt64) {
        self.timeNs = timeNs
        self.framesSent = framesSent
        self.framesDropped = framesDropped
    }
    static let payloadBytes = 24
}

/// WELCOME: the session's terms; travels with the ring's memfd.
public struct Welcome: Equatable, Sendable {
    public var versionMajor: UInt16
    public var versionMinor: UInt16
    public var capabilityBits: UInt32
    public var sessionID: UInt64
    public var ringBytes: UInt64
    public var slotCount: UInt32
    public var pixelFormatBits: UInt32
    public var slotBytes: UInt64
    public var firstSlotOffset: UInt64
    public var maxWidth: UInt32
    public var maxHeight: UInt32
    public var fps: UInt32
    public var heartbeatIntervalMs: UInt32
    public var peerTimeoutMs: UInt32

    public var capabilities: Capabilities { Capabilities(rawValue: capabilityBits) }
    public var pixelFormats: [PixelFormat] { PixelFormat.set(pixelFormatBits) }

    static let payloadBytes = 72
}

public struct Release: Equatable, Sendable {
    public var slot: UInt32
    public var sequence: UInt64
    public init(slot: UInt32, sequence: UInt64) {
        self.slot = slot
        self.sequence = sequence
    }
    static let payloadBytes = 16
}

public struct Config: Equatable, Sendable {
    public var fps: UInt32
    public var maxWidth: UInt32
    public var maxHeight: UInt32
    public var flags: UInt32
    public init(fps: UInt32, maxWidth: UInt32, maxHeight: UInt32, cursor: Bool) {
        self.fps = fps
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
        self.flags = cursor ? configFlagCursor : 0
    }
    static let payloadBytes = 16
}

/// One message of either direction.
public enum Message: Equatable, Sendable {
    case hello(Hello)
    case start(Start)
    case frame(Frame)
    case audio(Audio)
    case pause(reasonCode: UInt32)
    case resume
    case finish(Reason)
    case heartbeat(Heartbeat)
    case welcome(Welcome)
    case reject(Reason)
    case release(Release)
    case config(Config)
    case stop(Reason)
    case error(Reason)
    /// A message of a type this version does not know, marked optional: to be ignored.
    case ignoredOptional(type: UInt16)

    public var type: MessageType? {
        switch self {
        case .hello: return .hello
        case .start: return .start
        case .frame: return .frame
        case .audio: return .audio
        case .pause: return .pause
        case .resume: return .resume
        case .finish: return .finish
        case .heartbeat: return .heartbeat
        case .welcome: return .welcome
        case .reject: return .reject
        case .release: return .release
        case .config: return .config
        case .stop: return .stop
        case .error: return .error
        case .ignoredOptional: return nil
        }
    }

    /// The message's name in the specification, for logs and violations.
    public var name: String {
        type.map { "\($0)".uppercased() } ?? "OPTIONAL"
    }
}

// MARK: - Encoding

extension Message {
    /// The whole datagram: header and payload.
    public func encoded() -> [UInt8] {
        var datagram: [UInt8] = []
        encode(into: &datagram)
        return datagram
    }

    /// The whole datagram written into `datagram` (emptied first, its memory kept): the
    /// endpoints keep one buffer for every message they send (no array per RELEASE or FRAME).
    public func encode(into datagram: inout [UInt8]) {
        var payload = ByteWriter(reusing: &datagram)
        payload.u32(CaptureLinkProtocol.messageMagic)
        payload.u16(type?.rawValue ?? 0)
        payload.u16(0)
        payload.u32(0)  // the payload's length, patched below
        payload.u32(0)
        writePayload(into: &payload)
        payload.patchU32(UInt32(payload.bytes.count - CaptureLinkProtocol.headerBytes), at: 8)
        payload.finish(into: &datagram)
    }

    private func writePayload(into payload: inout ByteWriter) {
        switch self {
        case .hello(let hello):
            payload.u16(hello.versionMajor)
            payload.u16(hello.versionMinor)
            payload.u32(hello.pid)
            payload.u32(hello.capabilityBits)
            payload.u32(hello.pixelFormatBits)
            payload.u32(hello.audioFormatBits)
            payload.u32(hello.maxWidth)
            payload.u32(hello.maxHeight)
            payload.u32(0)
            payload.paddedText(hello.helperName, size: CaptureLinkProtocol.nameBytes)
            payload.paddedText(hello.helperVersion, size: CaptureLinkProtocol.versionBytes)
        case .start(let start):
            let info = Array(start.info.utf8)
            payload.u32(UInt32(info.count))
            payload.raw(info)
        case .frame(let frame):
            payload.u32(frame.slot)
            payload.u32(frame.formatCode)
            payload.u64(frame.sequence)
            payload.u64(frame.ptsNs)
            payload.u32(frame.width)
            payload.u32(frame.height)
            payload.u32(frame.flagBits)
            payload.u32(frame.planeCount)
            for index in 0..<3 { payload.u32(frame.strides[index]) }
            for index in 0..<3 { payload.u32(frame.planeOffsets[index]) }
        case .audio(let audio):
            payload.u32(audio.format.rawValue)
            payload.u32(audio.rateHz)
            payload.u16(audio.channels)
            payload.u16(0)
            payload.u32(audio.frameCount)
            payload.u64(audio.ptsNs)
            payload.raw(audio.pcm)
        case .pause(let reasonCode):
            payload.u32(reasonCode)
        case .resume, .ignoredOptional:
            break
        case .finish(let reason), .reject(let reason), .stop(let reason), .error(let reason):
            let text = Array(reason.text.utf8.prefix(CaptureLinkProtocol.textMaxBytes))
            payload.u32(reason.code)
            payload.u32(UInt32(text.count))
            payload.raw(text)
        case .heartbeat(let heartbeat):
            payload.u64(heartbeat.timeNs)
            payload.u64(heartbeat.framesSent)
            payload.u64(heartbeat.framesDropped)
        case .welcome(let welcome):
            payload.u16(welcome.versionMajor)
            payload.u16(welcome.versionMinor)
            payload.u32(welcome.capabilityBits)
            payload.u64(welcome.sessionID)
            payload.u64(welcome.ringBytes)
            payload.u32(welcome.slotCount)
            payload.u32(welcome.pixelFormatBits)
            payload.u64(welcome.slotBytes)
            payload.u64(welcome.firstSlotOffset)
            payload.u32(welcome.maxWidth)
            payload.u32(welcome.maxHeight)
            payload.u32(welcome.fps)
            payload.u32(welcome.heartbeatIntervalMs)
            payload.u32(welcome.peerTimeoutMs)
            payload.u32(0)
        case .release(let release):
            payload.u32(release.slot)
            payload.u32(0)
            payload.u64(release.sequence)
        case .config(let config):
            payload.u32(config.fps)
            payload.u32(config.maxWidth)
            payload.u32(config.maxHeight)
            payload.u32(config.flags)
        }
    }
}

// MARK: - Decoding

extension Message {
    /// Decodes one received datagram, checking framing, descriptors (only WELCOME carries one),
    /// sizes, reserved fields and text, in the order SPEC §4 gives.
    public static func decode(_ datagram: UnsafeRawBufferPointer, descriptorCount: Int = 0) throws(ProtocolViolation)
        -> Message
    {
        let headerBytes = CaptureLinkProtocol.headerBytes
        guard datagram.count >= headerBytes else {
            throw ProtocolViolation(.badLength, "message is \(datagram.count) bytes, shorter than the \(headerBytes)-byte header")
        }
        var header = ByteReader(UnsafeRawBufferPointer(rebasing: datagram[0..<headerBytes]))
        let magic = header.u32()
        let typeCode = header.u16()
        let flags = header.u16()
        let payloadBytes = header.u32()
        let reserved = header.u32()
        let carried = datagram.count - headerBytes
        guard Int(payloadBytes) == carried else {
            throw ProtocolViolation(.badLength, "header.payload_bytes is \(payloadBytes) but the message carries \(carried)")
        }
        guard magic == CaptureLinkProtocol.messageMagic else {
            throw ProtocolViolation(.badMagic, "header.magic is 0x\(hex(magic)), expected 0x\(hex(CaptureLinkProtocol.messageMagic))")
        }
        guard reserved == 0 else { throw ProtocolViolation(.reserved, "header.reserved is \(reserved), must be 0") }
        guard let type = MessageType(rawValue: typeCode) else {
            if flags & messageFlagOptional != 0 { return .ignoredOptional(type: typeCode) }
            throw ProtocolViolation(.unknownType, "message type 0x\(hex(typeCode)) is unknown and not marked optional")
        }
        let expectedDescriptors = type == .welcome ? 1 : 0
        guard descriptorCount == expectedDescriptors else {
            throw ProtocolViolation(.descriptors, "\("\(type)".uppercased()) carried \(descriptorCount) descriptor(s), "
                + "\(expectedDescriptors) expected")
        }
        let payload = UnsafeRawBufferPointer(rebasing: datagram[headerBytes...])
        return try decodePayload(type, payload)
    }

    private static func decodePayload(_ type: MessageType, _ payload: UnsafeRawBufferPointer) throws(ProtocolViolation)
        -> Message
    {
        // Only for error messages: built when one is thrown, not for every message (30 FRAMEs a second).
        var name: String { "\(type)".uppercased() }
        func requireSize(_ expected: Int) throws(ProtocolViolation) {
            guard payload.count == expected else {
                throw ProtocolViolation(.badLength, "\(name) payload is \(payload.count) bytes, must be \(expected)")
            }
        }
        func requireAtLeast(_ minimum: Int) throws(ProtocolViolation) {
            guard payload.count >= minimum else {
                throw ProtocolViolation(.badLength, "\(name) payload is \(payload.count) bytes, at least \(minimum) needed")
            }
        }
        func requireZero(_ value: UInt32, _ field: String) throws(ProtocolViolation) {
            guard value == 0 else { throw ProtocolViolation(.reserved, "\(name).\(field) is \(value), must be 0") }
        }
        var reader = ByteReader(payload)

        switch type {
        case .hello:
            // The major version is read before the size, so that any other major gets a clean
            // REJECT {VERSION}; a newer minor may append fields (SPEC §14.3).
            try requireAtLeast(4)
            let versionMajor = reader.u16(), versionMinor = reader.u16()
            if versionMajor != CaptureLinkProtocol.versionMajor {
                var hello = Hello(pid: 0, capabilities: [], pixelFormats: [], maxWidth: 0, maxHeight: 0,
                                  helperName: "", helperVersion: "")
                hello.versionMajor = versionMajor
                hello.versionMinor = versionMinor
                return .hello(hello)
            }
            if versionMinor > CaptureLinkProtocol.versionMinor {
                try requireAtLeast(Hello.payloadBytes)
            } else {
                try requireSize(Hello.payloadBytes)
            }
            let pid = reader.u32()
            let capabilityBits = reader.u32(), pixelFormatBits = reader.u32(), audioFormatBits = reader.u32()
            let maxWidth = reader.u32(), maxHeight = reader.u32()
            try requireZero(reader.u32(), "reserved")
            let helperName = try TextField.decodePadded(reader.raw(CaptureLinkProtocol.nameBytes), field: "HELLO.helper_name")
            let helperVersion = try TextField.decodePadded(
                reader.raw(CaptureLinkProtocol.versionBytes), field: "HELLO.helper_version")
            var hello = Hello(pid: pid, capabilities: [], pixelFormats: [], maxWidth: maxWidth, maxHeight: maxHeight,
                              helperName: helperName, helperVersion: helperVersion)
            hello.versionMajor = versionMajor
            hello.versionMinor = versionMinor
            hello.capabilityBits = capabilityBits
            hello.pixelFormatBits = pixelFormatBits
            hello.audioFormatBits = audioFormatBits
            return .hello(hello)

        case .start:
            try requireAtLeast(4)
            let infoBytes = Int(reader.u32())
            guard infoBytes == reader.remaining else {
                throw ProtocolViolation(.badLength, "START.info_bytes is \(infoBytes) but \(reader.remaining) bytes follow")
            }
            let info = try TextField.decodeCounted(reader.raw(infoBytes), field: "START.info",
                                            maxBytes: CaptureLinkProtocol.startInfoMaxBytes)
            return .start(Start(info: info))

        case .frame:
            try requireSize(Frame.payloadBytes)
            let raw = (reader.u32(), reader.u32(), reader.u64(), reader.u64(), reader.u32(), reader.u32(), reader.u32(),
                       reader.u32())
            let strides = [reader.u32(), reader.u32(), reader.u32()]
            let offsets = [reader.u32(), reader.u32(), reader.u32()]
            return .frame(Frame(raw: raw, strides: strides, planeOffsets: offsets))

        case .audio:
            try requireAtLeast(Audio.fixedBytes)
            let formatCode = reader.u32(), rateHz = reader.u32(), channels = reader.u16()
            try requireZero(UInt32(reader.u16()), "reserved")
            let frameCount = reader.u32(), ptsNs = reader.u64()
            guard let format = AudioFormat(rawValue: formatCode) else {
                throw ProtocolViolation(.format, "AUDIO.format \(formatCode) is not S16LE (1) or F32LE (2)")
            }
            // frame_count * channels * sample bytes cannot overflow 64 bits from 32 * 16 * 4 bits.
            let expected = UInt64(frameCount) * UInt64(channels) * UInt64(format.bytesPerSample)
            guard expected == UInt64(reader.remaining) else {
                throw ProtocolViolation(.audio, "AUDIO carries \(reader.remaining) PCM bytes but frame_count \(frameCount) "
                    + "x channels \(channels) x \(format.bytesPerSample) bytes is \(expected)")
            }
            var audio = Audio(format: format, rateHz: rateHz, channels: channels, ptsNs: ptsNs,
                              pcm: reader.raw(reader.remaining))
            audio.frameCount = frameCount
            return .audio(audio)

        case .pause:
            try requireSize(4)
            return .pause(reasonCode: reader.u32())

        case .resume:
            try requireSize(0)
            return .resume

        case .finish, .reject, .stop, .error:
            try requireAtLeast(8)
            let code = reader.u32()
            let textBytes = Int(reader.u32())
            guard textBytes == reader.remaining else {
                throw ProtocolViolation(.badLength, "\(name).text_bytes is \(textBytes) but \(reader.remaining) bytes follow")
            }
            let reason = Reason(code: code, text: try TextField.decodeCounted(
                reader.raw(textBytes), field: "\(name).text", maxBytes: CaptureLinkProtocol.textMaxBytes))
            switch type {
            case .finish: return .finish(reason)
            case .reject: return .reject(reason)
            case .stop: return .stop(reason)
            default: return .error(reason)
            }

        case .heartbeat:
            try requireSize(Heartbeat.payloadBytes)
            return .heartbeat(Heartbeat(timeNs: reader.u64(), framesSent: reader.u64(), framesDropped: reader.u64()))

        case .welcome:
            try requireSize(Welcome.payloadBytes)
            let welcome = Welcome(
                versionMajor: reader.u16(), versionMinor: reader.u16(), capabilityBits: reader.u32(),
                sessionID: reader.u64(), ringBytes: reader.u64(), slotCount: reader.u32(),
                pixelFormatBits: reader.u32(), slotBytes: reader.u64(), firstSlotOffset: reader.u64(),
                maxWidth: reader.u32(), maxHeight: reader.u32(), fps: reader.u32(),
                heartbeatIntervalMs: reader.u32(), peerTimeoutMs: reader.u32())
            try requireZero(reader.u32(), "reserved")
            return .welcome(welcome)

        case .release:
            try requireSize(Release.payloadBytes)
            let slot = reader.u32()
            try requireZero(reader.u32(), "reserved")
            return .release(Release(slot: slot, sequence: reader.u64()))

        case .config:
            try requireSize(Config.payloadBytes)
            var config = Config(fps: reader.u32(), maxWidth: reader.u32(), maxHeight: reader.u32(), cursor: false)
            config.flags = reader.u32()
            return .config(config)
        }
    }
}

func hex<T: BinaryInteger>(_ value: T) -> String { String(value, radix: 16, uppercase: true) }
