@testable import CaptureLink
import Testing

/// Every message's wire form: sizes pinned by protocol/livepush_capture.h, bytes little-endian.
@Suite(.timeLimit(.minutes(10))) struct MessageCodingTests {
    static let samples: [Message] = [
        .hello(Hello(pid: 4242, capabilities: [.audio, .damage], pixelFormats: [.bgrx, .nv12], audioFormats: [.s16le],
                     maxWidth: 1920, maxHeight: 1080, helperName: "pattern", helperVersion: "1.2.3")),
        .start(Start(info: #"{"source":"x11","display":":0"}"#)),
        .frame(Frame(slot: 2, format: .i420, sequence: 77, ptsNs: 123_456_789_000, width: 1280, height: 720,
                     flags: [.cursor], strides: [1280, 640, 640], planeOffsets: [0, 921_600, 1_152_000])),
        .frame(.unchanged(sequence: 78, ptsNs: 123_456_800_000)),
        .audio(Audio(format: .f32le, rateHz: 48000, channels: 2, ptsNs: 99, pcm: Array(repeating: 7, count: 64))),
        .pause(reasonCode: PauseReason.screenLocked.rawValue),
        .resume,
        .finish(Reason(code: FinishReason.sourceClosed.rawValue, text: "window 0x3a00007 was closed")),
        .heartbeat(Heartbeat(timeNs: 1, framesSent: 2, framesDropped: 3)),
        .welcome(Welcome(versionMajor: 1, versionMinor: 0, capabilityBits: 1, sessionID: 0xDEAD_BEEF_0000_0001,
                         ringBytes: 4096 + 3 * 8_294_400, slotCount: 3, pixelFormatBits: 0b10, slotBytes: 8_294_400,
                         firstSlotOffset: 4096, maxWidth: 1920, maxHeight: 1080, fps: 30, heartbeatIntervalMs: 1000,
                         peerTimeoutMs: 3000)),
        .reject(Reason(code: ErrorCode.busy.rawValue, text: "group 'g' is busy")),
        .release(Release(slot: 1, sequence: 76)),
        .config(Config(fps: 60, maxWidth: 1280, maxHeight: 720, cursor: true)),
        .stop(Reason(code: StopReason.pusherExiting.rawValue, text: "bye")),
        .error(Reason(code: ErrorCode.badSlot.rawValue, text: "FRAME.slot 7 out of range 0..2")),
    ]

    @Test(arguments: samples)
    func roundTrips(_ message: Message) throws {
        let bytes = message.encoded()
        let descriptors = message.type == .welcome ? 1 : 0
        let decoded = try bytes.withUnsafeBytes { try Message.decode($0, descriptorCount: descriptors) }
        #expect(decoded == message)
    }

    @Test func fixedPayloadSizesMatchTheCHeader() {
        func payloadBytes(_ message: Message) -> Int { message.encoded().count - 16 }
        #expect(payloadBytes(Self.samples[0]) == 80)  // lpc_hello
        #expect(payloadBytes(Self.samples[2]) == 64)  // lpc_frame
        #expect(payloadBytes(Self.samples[4]) == 24 + 64)  // lpc_audio + PCM
        #expect(payloadBytes(.pause(reasonCode: 1)) == 4)
        #expect(payloadBytes(.resume) == 0)
        #expect(payloadBytes(Self.samples[8]) == 24)  // lpc_heartbeat
        #expect(payloadBytes(Self.samples[9]) == 72)  // lpc_welcome
        #expect(payloadBytes(Self.samples[11]) == 16)  // lpc_release
        #expect(payloadBytes(Self.samples[12]) == 16)  // lpc_config
        #expect(payloadBytes(.stop(Reason(code: 1, text: "bye"))) == 8 + 3)  // lpc_reason + text
    }

    @Test func headerIsMagicTypeFlagsLengthReservedLittleEndian() {
        let bytes = Message.release(Release(slot: 1, sequence: 0x0102_0304_0506_0708)).encoded()
        #expect(bytes == [
            0x4C, 0x50, 0x43, 0x4C,  // "LPCL"
            0x83, 0x00,  // RELEASE
            0x00, 0x00,  // flags
            0x10, 0x00, 0x00, 0x00,  // payload_bytes 16
            0x00, 0x00, 0x00, 0x00,  // reserved
            0x01, 0x00, 0x00, 0x00,  // slot
            0x00, 0x00, 0x00, 0x00,  // reserved
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // sequence
        ])
    }

    @Test func helloNamesAreNulPaddedAndCutAtACharacterBoundary() throws {
        let long = String(repeating: "é", count: 40)  // 80 bytes of UTF-8
        let hello = Hello(pid: 1, capabilities: [], pixelFormats: [.bgrx], maxWidth: 1, maxHeight: 1,
                          helperName: long, helperVersion: "v")
        let decoded = try Message.hello(hello).encoded().withUnsafeBytes { try Message.decode($0) }
        guard case .hello(let back) = decoded else { Issue.record("not a HELLO"); return }
        #expect(back.helperName == String(repeating: "é", count: 16))  // 32 bytes fill the field
    }

    /// Found by the fuzzer: a name that fills its whole field has no NUL, and must survive re-encoding.
    @Test func helloNameFillingItsWholeFieldRoundTrips() throws {
        let hello = Hello(pid: 1, capabilities: [], pixelFormats: [.bgrx], maxWidth: 1, maxHeight: 1,
                          helperName: String(repeating: "n", count: 32), helperVersion: String(repeating: "v", count: 16))
        let bytes = Message.hello(hello).encoded()
        #expect(bytes.count == 16 + 80)
        let decoded = try bytes.withUnsafeBytes { try Message.decode($0) }
        #expect(decoded == .hello(hello))
    }

    /// Random messages of every kind survive the round trip (a seeded generator: reproducible).
    @Test func randomMessagesRoundTrip() throws {
        var generator = SplitMix64(seed: 0x11FE_C0DE)
        for _ in 0..<2000 {
            let message = randomMessage(&generator)
            let decoded = try message.encoded().withUnsafeBytes { try Message.decode($0) }
            #expect(decoded == message)
        }
    }

    private func randomMessage(_ g: inout SplitMix64) -> Message {
        func u32() -> UInt32 { UInt32(truncatingIfNeeded: g.next()) }
        func text() -> String {
            String((0..<Int(g.next() % 40)).map { _ in "aé√🙂-_ Z".randomElement(using: &g)! })
        }
        switch g.next() % 9 {
        case 0:
            var hello = Hello(pid: u32(), capabilities: [], pixelFormats: [], maxWidth: u32(), maxHeight: u32(),
                              helperName: String(text().prefix(8)), helperVersion: String(text().prefix(4)))
            hello.capabilityBits = u32()
            hello.pixelFormatBits = u32()
            hello.versionMinor = UInt16(truncatingIfNeeded: g.next())
            return .hello(hello)
        case 1:
            let format = PixelFormat.allCases.randomElement(using: &g)!
            let strides = (0..<format.planeCount).map { _ in u32() }
            let offsets = (0..<format.planeCount).map { _ in u32() }
            return .frame(Frame(slot: u32(), format: format, sequence: g.next(), ptsNs: g.next(), width: u32(),
                                height: u32(), flags: FrameFlags(rawValue: u32() & 7), strides: strides,
                                planeOffsets: offsets))
        case 2:
            let format = AudioFormat.allCases.randomElement(using: &g)!
            let channels = UInt16(1 + g.next() % 8)
            let frames = Int(g.next() % 100)
            let pcm = (0..<(frames * Int(channels) * format.bytesPerSample)).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            return .audio(Audio(format: format, rateHz: u32(), channels: channels, ptsNs: g.next(), pcm: pcm))
        case 3: return .finish(Reason(code: u32(), text: text()))
        case 4: return .heartbeat(Heartbeat(timeNs: g.next(), framesSent: g.next(), framesDropped: g.next()))
        case 5: return .release(Release(slot: u32(), sequence: g.next()))
        case 6: return .config(Config(fps: u32(), maxWidth: u32(), maxHeight: u32(), cursor: g.next() % 2 == 0))
        case 7: return .start(Start(info: text()))
        default: return .error(Reason(code: u32(), text: text()))
        }
    }
}

/// A small, fast, seeded generator, so random tests are reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
