@testable import CaptureLink
import Foundation
import Testing
import TestSupport

/// protocol/livepush_capture.h and the Swift codec describe the same bytes: a C program built
/// against the header alone prints its sizes and constants, and Swift's encodings must match.
@Suite(.timeLimit(.minutes(10))) struct CHeaderTests {
    private func compileAndRun(_ source: String, compiler: String, flags: [String]) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("header"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(compiler == "c++" ? "main.cpp" : "main.c")
        try source.write(to: file, atomically: true, encoding: .utf8)
        let binary = directory.appendingPathComponent("main").path
        let build = try ProcessRunner.run(compiler, flags + ["-Wall", "-Wextra", "-Werror", "-I",
                                                              Repository.path("protocol"), file.path, "-o", binary])
        #expect(build.exitCode == 0, "\(build)")
        return try ProcessRunner.run(binary, []).standardOutput
    }

    static let program = """
        #include <stdio.h>
        #include <livepush_capture.h>
        int main(void) {
            printf("header=%zu hello=%zu frame=%zu audio=%zu heartbeat=%zu welcome=%zu release=%zu config=%zu "
                   "reason=%zu pause=%zu start=%zu ring=%zu\\n",
                   sizeof(lpc_header), sizeof(lpc_hello), sizeof(lpc_frame), sizeof(lpc_audio),
                   sizeof(lpc_heartbeat), sizeof(lpc_welcome), sizeof(lpc_release), sizeof(lpc_config),
                   sizeof(lpc_reason), sizeof(lpc_pause), sizeof(lpc_start), sizeof(lpc_ring_header));
            printf("magic=%u ring_magic=%u max=%u types=%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d\\n",
                   LPC_MESSAGE_MAGIC, LPC_RING_MAGIC, LPC_MESSAGE_MAX_BYTES, LPC_HELLO, LPC_START, LPC_FRAME,
                   LPC_AUDIO, LPC_PAUSE, LPC_RESUME, LPC_FINISH, LPC_HEARTBEAT, LPC_WELCOME, LPC_REJECT,
                   LPC_RELEASE, LPC_CONFIG, LPC_STOP, LPC_ERROR);
            return 0;
        }
        """

    @Test func structSizesAndConstantsMatchTheSwiftCodec() throws {
        let output = try compileAndRun(Self.program, compiler: "cc", flags: ["-std=c11", "-pedantic"])
        func payload(_ message: Message) -> Int { message.encoded().count - CaptureLinkProtocol.headerBytes }
        let hello = payload(.hello(Hello(pid: 0, capabilities: [], pixelFormats: [], maxWidth: 0, maxHeight: 0,
                                         helperName: "", helperVersion: "")))
        let frame = payload(.frame(.unchanged(sequence: 1, ptsNs: 1)))
        let audio = payload(.audio(Audio(format: .s16le, rateHz: 1, channels: 1, ptsNs: 1, pcm: [])))
        let heartbeat = payload(.heartbeat(Heartbeat(timeNs: 0, framesSent: 0, framesDropped: 0)))
        let welcome = payload(.welcome(Welcome(
            versionMajor: 1, versionMinor: 0, capabilityBits: 0, sessionID: 0, ringBytes: 0, slotCount: 0,
            pixelFormatBits: 0, slotBytes: 0, firstSlotOffset: 0, maxWidth: 0, maxHeight: 0, fps: 0,
            heartbeatIntervalMs: 0, peerTimeoutMs: 0)))
        let release = payload(.release(Release(slot: 0, sequence: 0)))
        let config = payload(.config(Config(fps: 0, maxWidth: 0, maxHeight: 0, cursor: false)))
        let reason = payload(.finish(Reason(code: 0, text: "")))
        let types = MessageType.allCases.map { String($0.rawValue) }.joined(separator: ",")
        #expect(output == """
            header=\(CaptureLinkProtocol.headerBytes) hello=\(hello) frame=\(frame) audio=\(audio) \
            heartbeat=\(heartbeat) welcome=\(welcome) release=\(release) config=\(config) reason=\(reason) \
            pause=4 start=4 ring=\(RingHeaderField.pusherLastSequence + 8 + 48)
            magic=\(CaptureLinkProtocol.messageMagic) ring_magic=\(CaptureLinkProtocol.ringMagic) \
            max=\(CaptureLinkProtocol.messageMaxBytes) types=\(types)

            """)
    }

    @Test func headerCompilesAsCPlusPlus() throws {
        let output = try compileAndRun(Self.program.replacingOccurrences(of: "<stdio.h>", with: "<cstdio>"),
                                       compiler: "c++", flags: ["-std=c++17"])
        #expect(output.hasPrefix("header=16 hello=80 frame=64"))
    }
}
