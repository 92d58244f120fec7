import CaptureLink
import Foundation
import Glibc
import LinuxSystem
import Synchronization
import Testing
import TestSupport

/// The pusher's end against helpers that misbehave in ways no single message shows (issue 29):
/// one that never reads, clocks that run ahead, refusals by the hundred, and the threads that
/// reach a session from outside the link thread. Real sockets, a real ring, the hostile fixture.
@Suite(.timeLimit(.minutes(10))) struct MisbehavingHelperTests {
    private func makePusher(_ recorder: EventRecorder, runtime: String) throws(Rendezvous.Failure) -> PusherEndpoint {
        var configuration = PusherEndpointConfiguration(group: "test")
        configuration.runtimeDirectory = runtime
        configuration.maxWidth = 640
        configuration.maxHeight = 640
        return try PusherEndpoint(configuration: configuration) { recorder.record($0) }
    }

    /// SPEC §4.1: a helper that sends FRAMEs but never reads fills its socket with the pusher's
    /// RELEASEs. Before, the next send blocked the thread that made it: the video thread giving a
    /// frame back (the video froze) or the link thread (which then stopped reading). Now a
    /// consumer's release never waits, and the helper is called hung (ERROR TIMEOUT) once its
    /// socket stayed full for peer_timeout_ms.
    @Test(arguments: ["no-read-nonblocking", "no-read-blocking"])
    func aHelperThatNeverReadsBlocksNoThreadAndIsTimedOut(hostileCase: String) throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        // The video thread's part: borrow the newest frame, give it back at once, again and again.
        let running = Atomic<Bool>(true)
        let longestReleaseNs = Atomic<UInt64>(0)
        let consumer = Thread {
            while running.load(ordering: .relaxed) {
                if let frame = pusher.acquireLatestFrame() {
                    let startNs = MonotonicClock.nowNs()
                    frame.releaseConsumed()
                    let tookNs = MonotonicClock.nowNs() - startNs
                    if tookNs > longestReleaseNs.load(ordering: .relaxed) { longestReleaseNs.store(tookNs, ordering: .relaxed) }
                }
                usleep(2000)
            }
        }
        consumer.start()
        defer { running.store(false, ordering: .relaxed) }
        let helper = try ProcessRunner.run("python3", [
            Repository.path("Tests/Fixtures/hostile_helper.py"), "--socket", pusher.rendezvous.socketPath,
            "--case", hostileCase, "--timeout", "8",
        ], timeoutSeconds: 60)
        #expect(helper.exitCode == 0, "\(helper)")
        #expect(helper.standardOutput.contains("received ERROR code=15 name=TIMEOUT"), "\(helper)")
        let lost = recorder.wait(timeoutSeconds: 10) { $0.lostReason != nil }?.lostReason
        #expect(lost?.hasPrefix("helper hung: it read none of the pusher's messages for") == true, "\(lost ?? "none")")
        let longestMs = longestReleaseNs.load(ordering: .relaxed) / 1_000_000
        #expect(longestMs < 500, "a frame's release waited \(longestMs) ms on the helper's full socket")
    }

    /// SPEC §9: a FRAME or AUDIO stamped more than 1 s ahead of the pusher's clock is placed at its
    /// arrival, with one warning per message type however many follow (within 10 s).
    @Test func timestampsFromTheFutureArePlacedAtTheirArrivalWithOneWarning() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        var configuration = HelperEndpointConfiguration(group: "test", helperName: "clock-ahead", helperVersion: "1",
                                                        pixelFormats: [.bgrx], maxWidth: 64, maxHeight: 64)
        configuration.runtimeDirectory = runtime
        configuration.capabilities = [.audio]
        configuration.audioFormats = [.s16le]
        let helper = try HelperEndpoint(configuration: configuration)
        try helper.start(sourceInfo: "{}")
        let layout = FrameGeometry.packedLayout(.bgrx, width: 64, height: 64)
        let hourNs: UInt64 = 3_600_000_000_000
        var sentNs: [UInt64] = []
        for _ in 0..<20 {
            if let slot = try helper.acquireSlot() {
                sentNs.append(MonotonicClock.nowNs())
                try helper.publish(slot, format: .bgrx, width: 64, height: 64, strides: layout.strides,
                                   planeOffsets: layout.offsets, ptsNs: MonotonicClock.nowNs() + hourNs)
            }
            try helper.sendAudio(Audio(format: .s16le, rateHz: 48000, channels: 1,
                                       ptsNs: MonotonicClock.nowNs() + 5_000_000_000, pcm: [UInt8](repeating: 0, count: 1920)))
            _ = try helper.poll(timeoutMs: 10)
        }
        helper.finish(.user, text: "done")
        #expect(recorder.wait { $0.finished != nil } != nil)
        let events = recorder.all
        let frames = events.compactMap(\.frame)
        #expect(frames.count >= 10, "\(frames.count) frames")
        // Every frame placed near when it came, none an hour ahead.
        #expect(frames.allSatisfy { $0.ptsNs < MonotonicClock.nowNs() }, "\(frames.map(\.ptsNs))")
        let audio = events.compactMap { if case .audio(let audio) = $0 { audio } else { nil } }
        #expect(audio.count == 20 && audio.allSatisfy { $0.ptsNs < MonotonicClock.nowNs() })
        let warnings = events.compactMap { if case .implausibleTimestamp(let warning) = $0 { warning } else { nil } }
        #expect(warnings.map(\.message).sorted() == ["AUDIO", "FRAME"], "\(warnings)")
        #expect(warnings.first { $0.message == "FRAME" }.map { $0.aheadMs > 3_599_000 } == true, "\(warnings)")
        #expect(events.allSatisfy { $0.violation == nil })
    }

    /// 300 connections while a helper is connected: each is turned away (REJECT BUSY) but the
    /// pusher reports three, then one line counting the rest (at the latest when it stops).
    @Test func threeHundredRefusalsMakeFourEvents() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        var configuration = HelperEndpointConfiguration(group: "test", helperName: "first", helperVersion: "1",
                                                        pixelFormats: [.bgrx], maxWidth: 64, maxHeight: 64)
        configuration.runtimeDirectory = runtime
        let helper = try HelperEndpoint(configuration: configuration)
        try helper.start(sourceInfo: "{}")
        #expect(recorder.wait { $0.isStarted } != nil)
        var refused = 0
        for _ in 0..<300 {
            var busy = configuration
            busy.helperName = "second"
            busy.connectRetryMs = 2000
            do {
                _ = try HelperEndpoint(configuration: busy)
            } catch .rejected(let code, _) {
                if code == ErrorCode.busy.rawValue { refused += 1 }
            } catch {
                Issue.record("connection failed otherwise: \(error)")
            }
            _ = try helper.poll(timeoutMs: 0)  // the first helper stays alive meanwhile
        }
        #expect(refused == 300)
        helper.finish(.user, text: "done")
        #expect(recorder.wait { $0.finished != nil } != nil)
        pusher.stop()
        let rejections = recorder.all.compactMap(\.rejection)
        #expect(rejections.count == 4, "\(rejections.count) rejection events: \(rejections.map(\.1))")
        #expect(rejections.first?.1.contains("helper 'first'") == true)
        #expect(rejections.last?.1.hasPrefix("297 more connections were refused") == true, "\(rejections.last?.1 ?? "")")
    }

    /// Issue 29's first race: `requestStop` and the consumers' borrowing, from threads other than
    /// the link thread, while sessions begin (the ring mapping is set) and end (the state is
    /// written). Before, `requestStop` read the session's state and `acquireLatestFrame` its
    /// mapping without a lock: ThreadSanitizer reported both (`swift test --sanitize=thread
    /// --filter MisbehavingHelperTests`); without it this is a stress test that must end cleanly.
    @Test func stopRequestsAndBorrowingFromOtherThreadsRaceNoSession() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        let running = Atomic<Bool>(true)
        let borrowed = Atomic<Int>(0)
        let threads = (0..<3).map { index in
            Thread {
                while running.load(ordering: .relaxed) {
                    if index == 0 { pusher.requestStop(text: "stress") }
                    if let frame = pusher.acquireLatestFrame() {
                        borrowed.add(1, ordering: .relaxed)
                        frame.releaseConsumed()
                    }
                    usleep(200)
                }
            }
        }
        threads.forEach { $0.start() }
        defer { running.store(false, ordering: .relaxed) }
        var configuration = HelperEndpointConfiguration(group: "test", helperName: "stress", helperVersion: "1",
                                                        pixelFormats: [.bgrx], maxWidth: 64, maxHeight: 64)
        configuration.runtimeDirectory = runtime
        configuration.connectRetryMs = 3000
        let layout = FrameGeometry.packedLayout(.bgrx, width: 64, height: 64)
        var sessions = 0
        for _ in 0..<30 {
            let helper = try HelperEndpoint(configuration: configuration)
            try helper.start(sourceInfo: "{}")
            sessions += 1
            stopped: for _ in 0..<5 {
                if let slot = try? helper.acquireSlot() {
                    try? helper.publish(slot, format: .bgrx, width: 64, height: 64, strides: layout.strides,
                                        planeOffsets: layout.offsets)
                }
                for request in (try? helper.poll(timeoutMs: 2)) ?? [] {
                    if case .stop = request { break stopped }
                }
            }
            helper.finish(.user, text: "stopped")
            // This session's end (FINISH, or the STOP grace) before the next helper connects.
            #expect(waitUntil(timeoutSeconds: 5) {
                recorder.all.filter { $0.finished != nil || $0.lostReason != nil }.count >= sessions
            })
        }
        #expect(sessions == 30)
        #expect(recorder.all.allSatisfy { $0.violation == nil })
    }
}
