import Synchronization
import TestSupport
import CaptureLink
import Foundation
import Testing

/// The Swift pusher and helper ends talking over a real socket and a real sealed memfd.
@Suite(.timeLimit(.minutes(10))) struct EndpointTests {
    private func makePusher(_ recorder: EventRecorder, group: String = "test", runtime: String,
                            maxSize: UInt32 = 640) throws(Rendezvous.Failure) -> PusherEndpoint {
        var configuration = PusherEndpointConfiguration(group: group)
        configuration.runtimeDirectory = runtime
        configuration.maxWidth = maxSize
        configuration.maxHeight = maxSize
        return try PusherEndpoint(configuration: configuration) { recorder.record($0) }
    }

    private func helperConfiguration(group: String = "test", runtime: String) -> HelperEndpointConfiguration {
        var configuration = HelperEndpointConfiguration(group: group, helperName: "swift-test", helperVersion: "1",
                                                        pixelFormats: [.bgrx, .nv12], maxWidth: 320, maxHeight: 240)
        configuration.runtimeDirectory = runtime
        configuration.connectRetryMs = 2000
        return configuration
    }

    /// Fills a BGRx frame with the reference pattern: B = x + y + n, G = n >> 8, R = n.
    private func drawPattern(_ slot: WritableSlot, width: Int, height: Int, stride: Int, sequence: UInt64) {
        for y in 0..<height {
            for x in 0..<width {
                let offset = y * stride + x * 4
                slot.bytes[offset] = UInt8(truncatingIfNeeded: UInt64(x + y) + sequence)
                slot.bytes[offset + 1] = UInt8(truncatingIfNeeded: sequence >> 8)
                slot.bytes[offset + 2] = UInt8(truncatingIfNeeded: sequence)
                slot.bytes[offset + 3] = 0xFF
            }
        }
    }

    @Test func helperIsWelcomedWithASealedRingSizedForItsFrames() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        let helper = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
        #expect(helper.welcome.maxWidth == 320 && helper.welcome.maxHeight == 240)
        #expect(helper.welcome.slotCount == 3)
        #expect(helper.welcome.slotBytes == 307_200)  // 320 x 240 x 4, a multiple of 4096
        #expect(helper.welcome.ringBytes == 4096 + 3 * 307_200)
        #expect(helper.welcome.pixelFormats == [.bgrx, .nv12])
        let event = try #require(recorder.wait { $0.isConnected })
        guard case .connected(let info) = event else {
            Issue.record("the first event was \(event), not connected")
            return
        }
        #expect(info.name == "swift-test")
        #expect(info.pid == getpid())
        #expect(info.uid == getuid())
        helper.finish(.user, text: "done")
        #expect(recorder.wait { $0.finished != nil }?.finished?.1 == "done")
    }

    /// A pusher and a helper that connected and sent START.
    private func startedSession() throws -> (EventRecorder, PusherEndpoint, HelperEndpoint) {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        do {
            let helper = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
            try helper.start(sourceInfo: "{}")
            return (recorder, pusher, helper)
        } catch {
            pusher.stop()
            throw error
        }
    }

    /// The cause of the flaky X11 checkerboard test: a STOP that arrived while `acquireSlot`
    /// polled for RELEASEs was read there and dropped, so the helper captured on until the pusher
    /// closed the link 1 s later and it exited 1. The STOP must reach the next `poll`.
    @Test(.timeLimit(.minutes(10)))
    func aStopReadWhileAcquiringASlotIsHandedToTheNextPoll() throws {
        let (recorder, pusher, helper) = try startedSession()
        defer { pusher.stop() }
        #expect(recorder.wait { $0.isStarted } != nil)
        pusher.requestStop(text: "test stop")  // sent before it returns: the STOP is in the helper's socket
        #expect(try helper.acquireSlot() != nil)  // reads the STOP along with any RELEASE
        let requests = try helper.poll(timeoutMs: 0)
        let stop = requests.first { if case .stop = $0 { true } else { false } }
        #expect(stop != nil, "the STOP was lost: \(requests)")
        helper.finish(.user, text: "stopped")
    }

    /// SPEC §12.3 step 6: the pusher says what it wants (CONFIG) right after START.
    @Test(.timeLimit(.minutes(10)))
    func pusherSendsConfigRightAfterStart() throws {
        let (recorder, pusher, helper) = try startedSession()
        defer { pusher.stop() }
        var config: Config?
        let deadline = Date().addingTimeInterval(2)
        while config == nil && Date() < deadline {
            for request in try helper.poll(timeoutMs: 50) {
                if case .config(let received) = request { config = received }
            }
        }
        let received = try #require(config, "no CONFIG within 2 s of START")
        #expect(received.fps == 30 && received.maxWidth == 320 && received.maxHeight == 240 && received.flags == 0)
        helper.finish(.user, text: "done")
    }

    @Test func framesArriveIntactAndSlotsComeBack() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        let mismatches = Mutex(0)
        let checkedFrames = Mutex(0)
        recorder.onFrame = { info in
            // A newer frame may already have replaced this one: only the frames read are counted.
            guard let frame = pusher.acquireLatestFrame() else { return }
            defer { frame.release() }
            checkedFrames.withLock { $0 += 1 }
            let n = frame.info.sequence
            frame.withPlanes { planes in
                let bytes = planes[0]
                for y in stride(from: 0, to: info.height, by: 7) {
                    for x in stride(from: 0, to: info.width, by: 5) {
                        let offset = y * info.strides[0] + x * 4
                        if bytes[offset] != UInt8(truncatingIfNeeded: UInt64(x + y) + n)
                            || bytes[offset + 2] != UInt8(truncatingIfNeeded: n) {
                            mismatches.withLock { $0 += 1 }
                        }
                    }
                }
            }
        }
        let helper = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
        try helper.start(sourceInfo: #"{"source":"test"}"#)
        let layout = FrameGeometry.packedLayout(.bgrx, width: 320, height: 240)
        var published = 0
        for _ in 0..<60 {
            guard let slot = try helper.acquireSlot() else {
                _ = try helper.poll(timeoutMs: 5)
                continue
            }
            drawPattern(slot, width: 320, height: 240, stride: Int(layout.strides[0]), sequence: helper.framesPublished + 1)
            try helper.publish(slot, format: .bgrx, width: 320, height: 240, strides: layout.strides,
                               planeOffsets: layout.offsets)
            published += 1
            _ = try helper.poll(timeoutMs: 2)
        }
        #expect(recorder.wait { $0.frame?.sequence == UInt64(published) } != nil)
        #expect(mismatches.withLock { $0 } == 0)
        #expect(published >= 55, "only \(published) of 60 frames found a free slot")
        #expect(checkedFrames.withLock { $0 } >= published / 2, "only \(checkedFrames.withLock { $0 }) frames were read and checked")
        helper.finish(.user, text: "done")
        #expect(recorder.wait { $0.finished != nil } != nil)
        #expect(recorder.all.allSatisfy { $0.violation == nil })
    }

    @Test func secondHelperIsTurnedAwayAsBusyAndTheFirstGoesOn() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        let first = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
        #expect(recorder.wait { $0.isConnected } != nil)
        #expect(throws: HelperLinkError.rejected(
            code: 14, text: "group 'test' is busy: helper 'swift-test' (pid \(getpid())) is connected")) {
            _ = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
        }
        try first.start(sourceInfo: "{}")
        #expect(recorder.wait { $0.isStarted } != nil)
        first.finish(.user, text: "done")
    }

    @Test func pusherServesTheNextHelperAfterOneBreaksTheRules() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        let bad = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
        // A FRAME before START breaks the lifecycle.
        let slot = try #require(try bad.acquireSlot())
        try bad.publish(slot, format: .bgrx, width: 16, height: 16, strides: [64], planeOffsets: [0])
        let violation = try #require(recorder.wait { $0.violation != nil }?.violation)
        #expect(violation == ProtocolViolation(.state, "FRAME is not allowed before START"))
        #expect(throws: HelperLinkError.pusherError(code: 5, text: "FRAME is not allowed before START")) {
            _ = try bad.poll(timeoutMs: 1000)
        }

        let good = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
        try good.start(sourceInfo: "{}")
        #expect(recorder.wait { $0.isStarted } != nil)
        good.finish(.user, text: "done")
    }

    @Test func helperEndpointReleasedWithoutFinishingSendsFinish() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        var helper: HelperEndpoint? = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
        _ = helper
        #expect(recorder.wait { $0.isConnected } != nil)
        helper = nil  // deinit sends FINISH: that is a clean end, not a loss
        #expect(recorder.wait { $0.finished != nil } != nil)
    }

    @Test func helperStartingFirstConnectsWhenThePusherComes() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let connected = Mutex<HelperEndpoint?>(nil)
        let configuration = helperConfiguration(runtime: runtime)
        let thread = Thread { connected.withLock { $0 = try? HelperEndpoint(configuration: configuration) } }
        thread.start()
        Thread.sleep(forTimeInterval: 0.4)  // let it run: the helper tries for 0.4 s before a pusher exists
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        #expect(recorder.wait { $0.isConnected } != nil)
    }

    @Test func helperGivesUpNamingTheGroupAndPathWhenNoPusherComes() {
        let runtime = privateRuntimeDirectory()
        var configuration = helperConfiguration(group: "nobody-here", runtime: runtime)
        configuration.connectRetryMs = 300
        do {
            _ = try HelperEndpoint(configuration: configuration)
            Issue.record("connected to nothing")
        } catch {
            #expect(error.description.hasPrefix(
                "no pusher is listening on group 'nobody-here' (\(runtime)/livepush/nobody-here.sock) after "))
        }
    }

    /// SPEC §3.4 step 5: a helper says nothing to a socket in a directory others may enter.
    @Test func helperRefusesASocketDirectoryOthersCanEnterBeforeConnecting() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        defer { pusher.stop() }
        chmod(runtime + "/livepush", 0o755)
        let directory = runtime + "/livepush"
        #expect(throws: HelperLinkError.rendezvous(.unsafeDirectory(
            path: directory, reason: "mode 755 lets other users in; it must be 700 (chmod 700 \(directory))"))) {
            _ = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
        }
        #expect(recorder.wait(timeoutSeconds: 0.5) { $0.isConnected } == nil, "the helper connected anyway")
        chmod(directory, 0o700)
        _ = try HelperEndpoint(configuration: helperConfiguration(runtime: runtime))
        #expect(recorder.wait { $0.isConnected } != nil)
    }

    @Test func secondPusherOnALiveGroupIsRefusedButAStaleSocketIsReplaced() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        let pusher = try makePusher(recorder, runtime: runtime)
        #expect(throws: Rendezvous.Failure.groupInUse(group: "test", path: "\(runtime)/livepush/test.lock")) {
            _ = try makePusher(recorder, runtime: runtime)
        }
        pusher.stop()
        // A socket file left by a crashed pusher: bound, never listened on.
        let stale = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = "\(runtime)/livepush/test.sock"
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(stale)
        let replacement = try makePusher(recorder, runtime: runtime)
        replacement.stop()
    }

    /// SPEC §3.3: a pusher holds `flock(LOCK_EX)` on `<group>.lock` while it listens, so a second
    /// pusher is refused even when it starts at the same instant (before any socket exists).
    @Test(.timeLimit(.minutes(10)))
    func theGroupLockRefusesASecondPusherAndIsReleasedOnStop() throws {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        mkdir("\(runtime)/livepush", 0o700)
        let lockPath = "\(runtime)/livepush/test.lock"
        // Another pusher in the middle of starting: it holds the lock, no socket yet.
        let other = open(lockPath, O_RDWR | O_CREAT, 0o600)
        #expect(other >= 0 && flock(other, LOCK_EX | LOCK_NB) == 0)
        do throws(Rendezvous.Failure) {
            let pusher = try makePusher(recorder, runtime: runtime)
            pusher.stop()
            Issue.record("a second pusher listened while another held the group's lock")
        } catch {
            #expect(error == .groupInUse(group: "test", path: lockPath))
            #expect(error.description == "another pusher is already listening on group 'test' (\(lockPath) is taken); "
                + "stop it or choose another group")
        }
        close(other)
        let pusher = try makePusher(recorder, runtime: runtime)
        var info = stat()
        #expect(stat(lockPath, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let probe = open(lockPath, O_RDWR)
        #expect(flock(probe, LOCK_EX | LOCK_NB) != 0, "the listening pusher holds the lock")
        pusher.stop()
        #expect(flock(probe, LOCK_EX | LOCK_NB) == 0, "stop released the lock")
        close(probe)
        #expect(access(lockPath, F_OK) != 0, "stop removed the lock file: nothing is left behind")
    }
}



/// The pusher refuses a helper of another user (SO_PEERCRED), unless configured to allow it.
/// The test runs as root and the fixture drops to `nobody` before connecting.
@Suite(.enabled(if: getuid() == 0 || TestEnvironment.requireAll, "needs root to run a helper as nobody"), .timeLimit(.minutes(10)))
struct PeerCredentialTests {
    @Test func helperOfAnotherUserIsRejectedWithPeerUid() throws {
        #expect(getuid() == 0, "this test must run as root")
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        var configuration = PusherEndpointConfiguration(group: "uid")
        configuration.runtimeDirectory = runtime
        let pusher = try PusherEndpoint(configuration: configuration) { recorder.record($0) }
        defer { pusher.stop() }
        // Let nobody reach the socket, so that the uid check (not file permissions) is what refuses it.
        chmod(runtime, 0o755)
        chmod(runtime + "/livepush", 0o711)
        chmod(runtime + "/livepush/uid.sock", 0o666)
        let result = try ProcessRunner.run("python3", [
            Repository.path("Tests/Fixtures/hostile_helper.py"), "--group", "uid", "--case", "other-uid",
        ], environment: ["XDG_RUNTIME_DIR": runtime], timeoutSeconds: 20)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardOutput.contains("received REJECT code=13 name=PEER_UID"), "\(result)")
        let rejection = try #require(recorder.wait { $0.rejection != nil }?.rejection)
        #expect(rejection.0 == .peerUid)
        #expect(rejection.1.hasPrefix("helper runs as uid 65534 but this pusher runs as uid 0"))
    }
}
