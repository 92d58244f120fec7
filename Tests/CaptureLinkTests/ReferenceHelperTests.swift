import CaptureLink
import Foundation
import Synchronization
import Testing
import TestSupport

/// The reference helpers, written without Swift (C against the header alone, Python with the
/// standard library alone), talking to the Swift pusher side. Their pattern encodes the frame's
/// sequence number n in every pixel, so every received frame is checked whole: a torn or stale
/// frame would show.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ReferenceHelperTests {
    /// Pattern checker: counts frames and pixels that do not match their sequence number.
    final class PatternCheck: @unchecked Sendable {
        let lock = NSLock()
        var frames = 0
        var badFrames: [String] = []
        var formats: Set<PixelFormat> = []

        func check(_ frame: BorrowedFrame) {
            let info = frame.info
            let n = info.sequence
            let problem: String? = frame.withPlanes { planes in
                switch info.format {
                case .bgrx:
                    for y in 0..<info.height {
                        let row = y * info.strides[0]
                        for x in 0..<info.width {
                            let pixel = row + x * 4
                            if planes[0][pixel] != UInt8(truncatingIfNeeded: UInt64(x + y) &+ n)
                                || planes[0][pixel + 1] != UInt8(truncatingIfNeeded: n >> 8)
                                || planes[0][pixel + 2] != UInt8(truncatingIfNeeded: n)
                                || planes[0][pixel + 3] != 0xFF
                            { return "frame \(n) pixel (\(x),\(y)) wrong" }
                        }
                    }
                case .nv12, .i420:
                    for y in 0..<info.height {
                        for x in 0..<info.width
                        where planes[0][y * info.strides[0] + x] != UInt8(truncatingIfNeeded: UInt64(x + y) &+ n) {
                            return "frame \(n) luma (\(x),\(y)) wrong"
                        }
                    }
                    let chromaWidth = (info.width + 1) / 2, chromaHeight = (info.height + 1) / 2
                    let u = UInt8(truncatingIfNeeded: n), v = UInt8(truncatingIfNeeded: n >> 8)
                    for y in 0..<chromaHeight {
                        for x in 0..<chromaWidth {
                            let (gotU, gotV) = info.format == .nv12
                                ? (planes[1][y * info.strides[1] + 2 * x], planes[1][y * info.strides[1] + 2 * x + 1])
                                : (planes[1][y * info.strides[1] + x], planes[2][y * info.strides[2] + x])
                            if gotU != u || gotV != v { return "frame \(n) chroma (\(x),\(y)) wrong" }
                        }
                    }
                default:
                    return "unexpected format \(info.format)"
                }
                return nil
            }
            lock.lock()
            frames += 1
            formats.insert(info.format)
            if let problem { badFrames.append(problem) }
            lock.unlock()
        }
    }

    private func run(_ command: [String], frames: Int) throws -> (PatternCheck, [CaptureLinkEvent], CommandResult) {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let check = PatternCheck()
        let endpointBox = Mutex<PusherEndpoint?>(nil)
        recorder.onFrame = { _ in
            guard let frame = endpointBox.withLock({ $0 })?.acquireLatestFrame() else { return }
            check.check(frame)
            frame.release()
        }
        var configuration = PusherEndpointConfiguration(group: "ref")
        configuration.runtimeDirectory = runtime
        let pusher = try PusherEndpoint(configuration: configuration) { recorder.record($0) }
        endpointBox.withLock { $0 = pusher }
        defer { pusher.stop() }
        let helper = try ProcessRunner.start(command[0], Array(command.dropFirst()) + ["--group", "ref", "--frames",
                                                                                       String(frames)],
                                             environment: ["XDG_RUNTIME_DIR": runtime])
        _ = recorder.wait(timeoutSeconds: 20) { $0.finished != nil || $0.lostReason != nil || $0.violation != nil }
        let result = helper.finish()
        return (check, recorder.all, result)
    }

    @Test(arguments: ["bgrx", "nv12", "i420"])
    func cHelperFramesArriveWholeInEachFormat(format: String) throws {
        let (check, events, result) = try run([try Repository.cPatternHelper(), "--format", format,
                                               "--size", "641x361", "--fps", "60"], frames: 40)
        #expect(result.exitCode == 0, "\(result)")
        #expect(events.allSatisfy { $0.violation == nil }, "\(events)")
        #expect(events.contains { $0.finished?.0 == FinishReason.done.rawValue })
        #expect(check.frames >= 35, "only \(check.frames) of 40 frames checked")
        #expect(check.badFrames.isEmpty, "\(check.badFrames.prefix(3))")
        #expect(check.formats == [PixelFormat(rawValue: ["bgrx": 1, "nv12": 5, "i420": 6][format]!)!])
    }

    @Test func pythonHelperFramesArriveWhole() throws {
        let (check, events, result) = try run(["python3", Repository.path("tools/examples/pattern_helper.py"),
                                               "--size", "320x240"], frames: 30)
        #expect(result.exitCode == 0, "\(result)")
        #expect(events.allSatisfy { $0.violation == nil }, "\(events)")
        #expect(events.contains { $0.finished != nil })
        #expect(check.frames >= 25, "only \(check.frames) of 30 frames checked")
        #expect(check.badFrames.isEmpty, "\(check.badFrames.prefix(3))")
    }

    /// A killed helper is an end of file on the socket: reported lost at once, well before the
    /// 3 s that would mean a hung helper.
    @Test func killedHelperIsReportedLostAtOnce() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        var configuration = PusherEndpointConfiguration(group: "killed")
        configuration.runtimeDirectory = runtime
        let pusher = try PusherEndpoint(configuration: configuration) { recorder.record($0) }
        defer { pusher.stop() }
        let helper = try ProcessRunner.start(try Repository.cPatternHelper(), ["--group", "killed"],
                                             environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(recorder.wait { $0.frame != nil } != nil)
        kill(helper.processIdentifier, SIGKILL)
        _ = helper.finish()
        let lost = recorder.wait(timeoutSeconds: 2) { $0.lostReason != nil }?.lostReason
        #expect(lost == "helper closed the connection without FINISH")
    }

    @Test func cHelperSendsDesktopAudioWhenAsked() throws {
        let (_, events, result) = try run([try Repository.cPatternHelper(), "--audio"], frames: 30)
        #expect(result.exitCode == 0, "\(result)")
        let audio = events.compactMap { event -> Audio? in if case .audio(let a) = event { return a } else { return nil } }
        #expect(audio.count >= 20)
        let first = try #require(audio.first)
        #expect(first.format == .s16le && first.rateHz == 48000 && first.channels == 2 && first.frameCount == 960)
    }
}
