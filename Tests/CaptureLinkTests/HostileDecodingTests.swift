@testable import CaptureLink
import Testing

/// Malformed datagrams are refused with the rule they break and a detail naming the field.
@Suite(.timeLimit(.minutes(10))) struct HostileDecodingTests {
    private func decodeResult(_ bytes: [UInt8], descriptors: Int = 0) -> Result<Message, ProtocolViolation> {
        bytes.withUnsafeBytes { buffer in
            do throws(ProtocolViolation) {
                return .success(try Message.decode(buffer, descriptorCount: descriptors))
            } catch {
                return .failure(error)
            }
        }
    }

    private func decode(_ bytes: [UInt8]) throws -> Message { try decodeResult(bytes).get() }

    private func violation(_ bytes: [UInt8], descriptors: Int = 0) -> ProtocolViolation? {
        if case .failure(let violation) = decodeResult(bytes, descriptors: descriptors) { return violation }
        return nil
    }

    private var heartbeat: [UInt8] { Message.heartbeat(Heartbeat(timeNs: 1, framesSent: 0, framesDropped: 0)).encoded() }

    @Test func shorterThanAHeader() {
        #expect(violation(Array(heartbeat.prefix(8)))
            == ProtocolViolation(.badLength, "message is 8 bytes, shorter than the 16-byte header"))
    }

    @Test func wrongMagic() {
        var bytes = heartbeat
        bytes[0] = 0x58
        #expect(violation(bytes)?.code == .badMagic)
        #expect(violation(bytes)?.detail == "header.magic is 0x4C435058, expected 0x4C43504C")
    }

    @Test func lengthThatLies() {
        var bytes = heartbeat
        bytes[8] = 200
        #expect(violation(bytes) == ProtocolViolation(.badLength, "header.payload_bytes is 200 but the message carries 24"))
    }

    @Test func fixedPayloadOfTheWrongSize() {
        var bytes = Message.hello(Hello(pid: 1, capabilities: [], pixelFormats: [.bgrx], maxWidth: 1, maxHeight: 1,
                                        helperName: "x", helperVersion: "1")).encoded()
        bytes.removeLast()
        bytes[8] = 79
        #expect(violation(bytes) == ProtocolViolation(.badLength, "HELLO payload is 79 bytes, must be 80"))
    }

    @Test func reservedHeaderFieldNotZero() {
        var bytes = heartbeat
        bytes[12] = 1
        #expect(violation(bytes) == ProtocolViolation(.reserved, "header.reserved is 1, must be 0"))
    }

    @Test func unknownTypeIsRefusedUnlessOptional() throws {
        var bytes = heartbeat
        bytes[4] = 0x30
        bytes[5] = 0x00
        #expect(violation(bytes)?.code == .unknownType)
        bytes[6] = 0x01  // LPC_FLAG_OPTIONAL
        #expect(try decode(bytes) == .ignoredOptional(type: 0x30))
    }

    @Test func helloOfAnotherMajorVersionDecodesFromItsFirstFourBytes() throws {
        // A 2.x HELLO of any size must get REJECT {VERSION}, not BAD_LENGTH (SPEC 14.3).
        var bytes: [UInt8] = [0x4C, 0x50, 0x43, 0x4C, 0x01, 0x00, 0x00, 0x00, 0x06, 0, 0, 0, 0, 0, 0, 0]
        bytes += [0x02, 0x00, 0x07, 0x00, 0xAA, 0xBB]
        guard case .hello(let hello) = try decode(bytes) else { Issue.record("not a HELLO"); return }
        #expect(hello.versionMajor == 2 && hello.versionMinor == 7)
    }

    @Test func helloOfANewerMinorMayBeLonger() throws {
        var hello = Hello(pid: 1, capabilities: [], pixelFormats: [.bgrx], maxWidth: 8, maxHeight: 8,
                          helperName: "new", helperVersion: "2")
        hello.versionMinor = 3
        var bytes = Message.hello(hello).encoded() + [1, 2, 3, 4]
        bytes[8] = 84
        guard case .hello(let decoded) = try decode(bytes) else { Issue.record("not a HELLO"); return }
        #expect(decoded.helperName == "new" && decoded.versionMinor == 3)
    }

    @Test func descriptorsAreCheckedBeforeThePayload() {
        var bytes = heartbeat
        bytes.removeLast()
        bytes[8] = 23
        #expect(violation(bytes, descriptors: 1) == ProtocolViolation(.descriptors, "HEARTBEAT carried 1 descriptor(s), 0 expected"))
        #expect(violation(Message.resume.encoded(), descriptors: 2)?.code == .descriptors)
    }

    @Test func unknownOptionalMessageWithADescriptorIsStillIgnored() throws {
        var bytes = heartbeat
        bytes[4] = 0x31
        bytes[6] = 0x01
        #expect(try decodeResult(bytes, descriptors: 1).get() == .ignoredOptional(type: 0x31))
    }

    @Test func countedTextWithANulIsRefused() {
        #expect(violation(Message.finish(Reason(code: 1, text: "a\u{0}b")).encoded())
            == ProtocolViolation(.text, "FINISH.text holds a NUL byte at 1"))
    }

    @Test func textThatIsNotUTF8() {
        var bytes = Message.start(Start(info: "{}")).encoded()
        bytes[bytes.count - 1] = 0xFF
        #expect(violation(bytes) == ProtocolViolation(.text, "START.info is not valid UTF-8"))
    }

    @Test func textLengthThatLies() {
        var bytes = Message.finish(Reason(code: 1, text: "done")).encoded()
        bytes[20] = 9
        #expect(violation(bytes) == ProtocolViolation(.badLength, "FINISH.text_bytes is 9 but 4 bytes follow"))
    }

    @Test func audioWhosePcmDisagreesWithItsFrameCount() {
        var bytes = Message.audio(Audio(format: .s16le, rateHz: 48000, channels: 2, ptsNs: 1,
                                        pcm: [UInt8](repeating: 0, count: 16))).encoded()
        bytes[28] = 5  // frame_count 4 -> 5
        #expect(violation(bytes) == ProtocolViolation(
            .audio, "AUDIO carries 16 PCM bytes but frame_count 5 x channels 2 x 2 bytes is 20"))
    }

    @Test func everyTruncationOfEveryMessageIsRefusedNotCrashed() {
        for message in MessageCodingTests.samples {
            let bytes = message.encoded()
            for length in 0..<bytes.count {
                #expect(violation(Array(bytes.prefix(length))) != nil, "\(message.name) cut to \(length) bytes")
            }
        }
    }

    @Test func randomBytesNeverCrashTheDecoder() {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<20000 {
            var bytes = (0..<Int(generator.next() % 120)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            if bytes.count >= 16 && generator.next() % 2 == 0 {
                // Make the header plausible so the payload checks are reached too.
                bytes.replaceSubrange(0..<4, with: [0x4C, 0x50, 0x43, 0x4C])
                let payload = UInt32(bytes.count - 16)
                bytes.replaceSubrange(8..<16, with: [UInt8(payload & 0xFF), UInt8(payload >> 8), 0, 0, 0, 0, 0, 0])
                bytes[5] = 0
                bytes[4] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x40, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86]
                    .randomElement(using: &generator)!
            }
            _ = try? decode(bytes)
        }
    }
}

@Suite(.timeLimit(.minutes(10))) struct FrameGeometryTests {
    private func check(_ frame: Frame, max: UInt32 = 1920, slotBytes: UInt64 = 1920 * 1080 * 4) -> ProtocolViolation? {
        do {
            try FrameGeometry.validate(frame, format: frame.format!, maxWidth: max, maxHeight: max, slotBytes: slotBytes)
            return nil
        } catch {
            return error
        }
    }

    @Test func nv12At1080pFitsWithItsPackedLayout() {
        let layout = FrameGeometry.packedLayout(.nv12, width: 1920, height: 1080)
        #expect(layout.strides == [1920, 1920])
        #expect(layout.offsets == [0, 2_073_600])
        #expect(layout.bytes == 3_110_400)
        let frame = Frame(slot: 0, format: .nv12, sequence: 1, ptsNs: 1, width: 1920, height: 1080,
                          strides: layout.strides, planeOffsets: layout.offsets)
        #expect(check(frame) == nil)
    }

    @Test func i420OddSizeRoundsChromaUp() {
        let layout = FrameGeometry.packedLayout(.i420, width: 641, height: 361, alignment: 1)
        #expect(layout.strides == [641, 321, 321])
        #expect(layout.offsets == [0, 231_401, 231_401 + 321 * 181])
    }

    @Test func strideBelowTheRowIsRefused() {
        let frame = Frame(slot: 0, format: .bgrx, sequence: 1, ptsNs: 1, width: 100, height: 10, strides: [396],
                          planeOffsets: [0])
        #expect(check(frame) == ProtocolViolation(.geometry, "FRAME.stride[0] 396 is below the row size 400"))
    }

    @Test func hugeStrideTimesRowsIsCaughtWithoutOverflow() {
        let frame = Frame(slot: 0, format: .bgrx, sequence: 1, ptsNs: 1, width: 1920, height: 1080,
                          strides: [0xFFFF_FFFC], planeOffsets: [0xFFFF_FFFF])
        #expect(check(frame)?.code == .geometry)
    }

    @Test func planePastTheSlotIsRefused() {
        let frame = Frame(slot: 0, format: .bgrx, sequence: 1, ptsNs: 1, width: 16, height: 16, strides: [64],
                          planeOffsets: [4096 - 64 * 15])
        #expect(check(frame, slotBytes: 4096) == ProtocolViolation(
            .geometry, "FRAME plane 0 (offset 3136, stride 64, 16 rows) ends past the slot's 4096 bytes"))
    }

    @Test func sizeBeyondTheNegotiatedMaximumIsRefused() {
        let frame = Frame(slot: 0, format: .bgrx, sequence: 1, ptsNs: 1, width: 1921, height: 10, strides: [7684],
                          planeOffsets: [0])
        #expect(check(frame) == ProtocolViolation(.geometry, "FRAME size 1921x10 outside 1x1..1920x1920"))
    }

    @Test func unusedPlaneMustBeZero() {
        var frame = Frame(slot: 0, format: .bgrx, sequence: 1, ptsNs: 1, width: 16, height: 16, strides: [64],
                          planeOffsets: [0])
        frame.strides[1] = 64
        #expect(check(frame)?.code == .geometry)
    }
}
