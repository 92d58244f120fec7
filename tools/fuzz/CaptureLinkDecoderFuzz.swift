// libFuzzer entry point for the Capture Link decoder: every byte string a helper could send
// goes through Message.decode and, for frames, through the geometry validation the pusher
// runs. Anything but a thrown ProtocolViolation (a trap, an overflow, an out-of-bounds read
// caught by AddressSanitizer) is a bug. Built and run by tools/fuzz/run.

@_cdecl("LLVMFuzzerTestOneInput")
public func captureLinkDecoderFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let datagram = UnsafeRawBufferPointer(start: data, count: size)
    // The last byte picks how many descriptors "arrived" with it (0 or 1: WELCOME needs one).
    let descriptors = size > 0 && data[size - 1] & 1 == 1 ? 1 : 0
    guard let message = try? Message.decode(datagram, descriptorCount: descriptors) else { return 0 }
    if case .frame(let frame) = message, let format = frame.format {
        try? FrameGeometry.validate(frame, format: format, maxWidth: 3840, maxHeight: 2160, slotBytes: 33_177_600)
    }
    // Whatever decodes must survive encoding: decode(encode(m)) == m. (Bytes may differ where
    // the decoder ignores them: unknown header flags, bytes after a name's NUL.)
    if case .ignoredOptional = message { return 0 }
    let encoded = message.encoded()
    let again = encoded.withUnsafeBytes { try? Message.decode($0, descriptorCount: descriptors) }
    if again != message { fatalError("decode(encode(m)) != m for \(message.name)") }
    return 0
}
