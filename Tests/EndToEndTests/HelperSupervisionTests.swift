import Foundation
import Glibc
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush screen` keeps its helper alive and ends cleanly: a killed helper is restarted
    /// and the push goes on; Ctrl-C finishes everything and leaves nothing behind (how fast: `make soak`).
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct HelperSupervisionTests {
        let livepush = BuiltProducts.path("livepush")

        private func start(_ extra: [String]) throws -> RunningCommand {
            try ProcessRunner.start(livepush, ["screen", "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
                                               "--resolution", "320x240", "--quiet"] + extra)
        }

        private func helperPid(of command: RunningCommand) -> Int32? {
            command.childProcessIdentifiers.first { pid in
                ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").contains("livepush-capture")
            }
        }

        private func isAlive(_ pid: Int32) -> Bool { ProcessTable.isAlive(pid) }

        /// After each kill, nginx received the placeholder and then, within 5 s of the kill (stream
        /// time), the painter's square live again: undimmed and moving, not a frozen or dimmed picture.
        @Test func aKilledHelperIsRestartedAndTheLiveScreenIsBackAtTheReceiver() throws {
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+0+0", "square", "1e2a3a", "ffcc00", "120", "8"])
            defer {
                painter.closeInput()
                _ = painter.finish()
            }
            let key = UniqueName.make("killed")
            let screen = try start([try TestEnvironment.recordURL(key: key)])
            #expect(screen.waitForError("screen capture started"))
            let file = try TestEnvironment.recordedFile(key: key).path
            /// The stream time of the last picture nginx has written (-1 before the first).
            func receivedMs() -> Int { ((try? FLVTagReader.lastVideoMs(file)) ?? nil) ?? -1 }
            var faultsMs: [Int] = []
            for round in 1...3 {
                let since = faultsMs.last.map { $0 + 2500 } ?? 1500
                try #require(waitUntil(timeoutSeconds: 60) { receivedMs() >= since },
                             "round \(round): nginx has pictures up to \(receivedMs()) ms, not \(since): \(screen.errorSoFar)")
                let pid = try #require(helperPid(of: screen), "no helper process in round \(round): \(screen.errorSoFar)")
                faultsMs.append(receivedMs())
                kill(pid, SIGKILL)
                #expect(screen.waitForError("screen capture started", count: round + 1), "round \(round): \(screen.errorSoFar)")
            }
            let lastFaultMs = try #require(faultsMs.last)
            #expect(waitUntil(timeoutSeconds: 60) { receivedMs() >= lastFaultMs + 6000 }, "\(receivedMs()) ms received")
            screen.interrupt()
            let result = screen.finish()
            #expect(result.exitCode == 0, "\(result)")
            #expect(result.standardError.components(separatedBy: "was killed by signal 9 (SIGKILL)").count - 1 == 3,
                    "\(result.standardError)")
            let pictures = try ReceivedPictures.decode(file)
            for faultMs in faultsMs {
                let recovery = PainterSquare(minShare: 0.1).recovery(after: faultMs, in: pictures)
                #expect(recovery.placeholderMs != nil && recovery.liveBackMs != nil, "\(recovery)")
                #expect((recovery.liveBackMs ?? .max) <= 5000, "\(recovery)")
            }
            let gaps = zip(pictures.timesMs, pictures.timesMs.dropFirst()).map { $1 - $0 }
            #expect(pictures.count >= 100, "\(pictures.count) pictures")
            #expect(try #require(gaps.max()) <= 1000, "largest gap between pictures \(gaps.max() ?? -1) ms")
        }

        @Test func ctrlCFinishesEverythingAndLeavesNothingBehind() throws {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("ctrlc")).path + ".mp4"
            defer { try? FileManager.default.removeItem(atPath: path) }
            let key = UniqueName.make("ctrlc")
            let screen = try start([path, try TestEnvironment.recordURL(key: key)])
            #expect(screen.waitForError("screen capture started"))
            let file = try TestEnvironment.recordedFile(key: key).path
            #expect(waitUntil(timeoutSeconds: 30) { ((try? FLVTagReader.lastVideoMs(file)) ?? nil) ?? 0 >= 1500 },
                    "nginx received no 1.5 s of pictures")
            let helper = helperPid(of: screen)
            let group = "screen-\(screen.processIdentifier)"
            let socketDirectory = (ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/tmp") + "/livepush"
            let socketsBefore = (try? FileManager.default.contentsOfDirectory(atPath: socketDirectory)) ?? []
            #expect(socketsBefore.contains { $0.hasPrefix(group) }, "\(socketsBefore)")
            let interruptedAt = Date()
            screen.interrupt()
            let result = screen.finish()
            let exitSeconds = Date().timeIntervalSince(interruptedAt)
            #expect(result.exitCode == 0, "\(result)")
            // How soon is a benchmark's figure (`make soak`: shutdown exit_ms); here a generous deadline.
            #expect(exitSeconds < 20, "exited \(exitSeconds) s after SIGINT")
            let helperPid = try #require(helper, "no helper process was found while it ran")
            #expect(!isAlive(helperPid), "the helper \(helperPid) outlived the pusher")
            let socketsAfter = (try? FileManager.default.contentsOfDirectory(atPath: socketDirectory)) ?? []
            #expect(!socketsAfter.contains { $0.hasPrefix(group) }, "left behind: \(socketsAfter)")
            let probe = try MediaProbe.videoStream(path)
            #expect(Int(probe["nb_read_frames"] ?? "") ?? 0 >= 45, "\(probe)")
        }

        /// The first Ctrl-C's stop is held by a server that never finishes the handshake (stopping a push
        /// waits for its sender, which cannot be broken while it connects); a second one ends it with 130.
        /// Deterministic: the second comes only once the first is seen handled (the recording finished,
        /// the step before the pushes stop) while the server still holds the handshake, whatever the load.
        @Test func aSecondCtrlCForcesTheExitAndKillsTheHelper() throws {
            let server = try TricklingRTMPServer()
            defer { server.close() }
            let base = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("ctrlc2")).path
            let (recording, events) = (base + ".mp4", base + ".jsonl")
            defer { [recording, events].forEach { try? FileManager.default.removeItem(atPath: $0) } }
            let screen = try start(["--events", events, recording, "rtmp://127.0.0.1:\(server.port)/live/hidden"])
            #expect(screen.waitForError("screen capture started"))
            try #require(waitUntil(timeoutSeconds: 30) { server.handshakeReceived }, "no handshake: \(screen.errorSoFar)")
            let helper = helperPid(of: screen)
            screen.interrupt()
            let recordComplete = "\"type\":\"recordComplete\""
            let handled = waitUntil(timeoutSeconds: 60) {
                ((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").contains(recordComplete)
            }
            try #require(handled, "the first Ctrl-C did not finish the recording: \(screen.errorSoFar)")
            try #require(screen.isRunning && server.isHolding, "the stop was not held by the handshake: \(screen.errorSoFar)")
            screen.interrupt()
            let result = screen.finish()
            #expect(result.exitCode == 130, "\(result)")
            #expect(result.standardError.contains("interrupted again"))
            #expect(server.isHolding, "the server let the handshake go before the exit")
            let helperPid = try #require(helper, "no helper process was found while it ran")
            #expect(waitUntil(timeoutSeconds: 10) { !isAlive(helperPid) }, "the helper \(helperPid) outlived the pusher")
        }

        @Test func aHelperThatKeepsFailingIsGivenUpOnWithAClearError() throws {
            let screen = try start(["--helper", "/bin/false", FileManager.default.temporaryDirectory
                .appendingPathComponent(UniqueName.make("never")).path + ".mp4"])
            let result = screen.finish()
            #expect(result.exitCode == 1, "\(result)")
            #expect(result.standardError.contains("exited with status 1 after"), "\(result.standardError)")
            #expect(result.standardError.contains("failed 5 times in a row"), "\(result.standardError)")
            #expect(result.standardError.contains("restarting it in 1 s") && result.standardError.contains("restarting it in 5 s"))
        }

        /// `livepush screen --damage` passes the option on to the helper it starts.
        @Test(.timeLimit(.minutes(10)))
        func damageIsPassedOnToTheHelper() throws {
            let output = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("damage")).path + ".mp4"
            defer { try? FileManager.default.removeItem(atPath: output) }
            let screen = try start(["--damage", "--duration", "3", output])
            var helperArguments: [String] = []
            let deadline = Date().addingTimeInterval(5)
            while helperArguments.isEmpty && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.05)
                if let pid = helperPid(of: screen),
                   let cmdline = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8) {
                    helperArguments = cmdline.split(separator: "\0").map(String.init)
                }
            }
            let result = screen.finish()
            #expect(result.exitCode == 0, "\(result)")
            #expect(helperArguments.contains("--damage"), "the helper ran with \(helperArguments)")
        }

        /// A helper that cannot run as configured exits 78 (EX_CONFIG, SPEC §13.5): the run stops at
        /// its first exit, with its reason, instead of restarting it five times.
        @Test(.timeLimit(.minutes(10)), arguments: [
            (["--region", "5000,5000,100,100"], "is not inside the"),
            (["--display", ":9876"], ":9876"),
        ])
        func aHelperWithAWrongConfigurationIsNotRestarted(options: [String], reason: String) throws {
            let output = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("config")).path + ".mp4"
            let result = try ProcessRunner.run(livepush, ["screen", "--display", try TestEnvironment.display(),
                                                          "--resolution", "320x240", "--quiet", output] + options,
                                               timeoutSeconds: 30)
            #expect(result.exitCode == 1, "\(result)")
            #expect(result.standardError.contains("the capture helper cannot run with its configuration (exit status 78): "),
                    "\(result.standardError)")
            let line = result.standardError.split(separator: "\n").first { $0.contains("exit status 78") } ?? ""
            #expect(line.contains(reason), "the helper's reason is missing: \(line)")
            #expect(!result.standardError.contains("restarting it"), "\(result.standardError)")
            try? FileManager.default.removeItem(atPath: output)
        }
    }
}

extension SharedScreen {
    /// `livepush push --group NAME URL`: the pusher waits for any helper on the group.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct PushFromAGroupTests {
        @Test func pushWithAGroupWaitsForAHelperAndPublishesWhatItSends() throws {
            let group = UniqueName.make("pushgroup")
            let key = UniqueName.make("pushgroup")
            let push = try ProcessRunner.start(BuiltProducts.path("livepush"), [
                "push", "--group", group, try TestEnvironment.recordURL(key: key), "--resolution", "320x240",
                "--no-mic", "--duration", "4", "--quiet",
            ])
            #expect(push.waitForError("waiting for a capture helper on group '\(group)'"), "\(push.errorSoFar)")
            let helper = try ProcessRunner.start(BuiltProducts.path("livepush-capture"), [
                "--group", group, "--display", try TestEnvironment.display(), "--region", "0,0,320,240",
            ])
            let result = push.finish()
            _ = helper.finish()
            #expect(result.exitCode == 0, "\(result)")
            #expect(!result.standardError.contains(key) && !result.standardOutput.contains(key))
            let stream = try MediaProbe.videoStream(try TestEnvironment.closedRecording(key: key))
            #expect(stream["codec_name"] == "h264" && (Int(stream["nb_read_frames"] ?? "") ?? 0) >= 60, "\(stream)")
        }
    }
}

/// A TCP server on 127.0.0.1 that takes one RTMP connection, reads C0+C1 and answers S0 and then
/// one byte of S1 every 0.5 s: the client's handshake never completes, and never times out either
/// (its timeout is per read), for as long as the server runs.
private final class TricklingRTMPServer: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var received = false
    private var holding = false
    private var closed = false

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listener = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, $0, &length) == 0
        } }
        guard listening else {
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in serve() }
    }

    /// C0+C1 (1537 bytes) arrived: the client is in its handshake.
    var handshakeReceived: Bool { lock.withLock { received } }
    /// The connection is open and the server still trickles S1.
    var isHolding: Bool { lock.withLock { holding } }

    func close() {
        lock.withLock { closed = true }
        shutdown(listener, Int32(SHUT_RDWR))  // wakes a pending accept
        Glibc.close(listener)
    }

    private func serve() {
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { return }
        defer { Glibc.close(connection) }
        var buffer = [UInt8](repeating: 0, count: 1537)
        var count = 0
        while count < buffer.count {
            let n = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress! + count, $0.count - count, 0) }
            guard n > 0 else { return }
            count += n
        }
        lock.withLock { (received, holding) = (true, true) }
        defer { lock.withLock { holding = false } }
        var byte: UInt8 = 0x03  // S0: version 3, then S1's bytes
        while !lock.withLock({ closed }) && send(connection, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 {
            byte = 0
            Thread.sleep(forTimeInterval: 0.5)  // the trickle's pace (under the client's 5 s read timeout)
        }
    }
}
