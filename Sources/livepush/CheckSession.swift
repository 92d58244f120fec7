import CaptureLink
import CommandLineSupport
import Foundation
import LinuxSystem
import LivePush
import Synchronization

/// One run of a helper command against a private pusher endpoint, for `livepush check-helper`:
/// the endpoint, the helper process, and what the endpoint saw (filled on its link thread).
final class CheckSession: @unchecked Sendable {
    /// What the checker saw.
    final class Observations: @unchecked Sendable {
        let lock = NSLock()
        var connections = 0
        var connectedAfterMs: Int?
        var helper: HelperInfo?
        var started: String?
        var frames = 0
        var unchangedFrames = 0
        var audioMessages = 0
        var firstFrameNs: UInt64 = 0
        var lastFrameNs: UInt64 = 0
        /// Every frame: when it arrived and its size (for the CONFIG path).
        var frameLog: [(ns: UInt64, width: Int, height: Int)] = []
        var finished: (code: UInt32, text: String, atNs: UInt64)?
        var lost: String?
        var violation: (ProtocolViolation, [UInt8])?
        var rejection: (ErrorCode, String)?
        /// The first timestamp more than 1 s ahead of the clock (SPEC §9), if any.
        var implausibleTimestamp: ImplausibleTimestamp?
        var endedAtNs: UInt64 = 0
        let ended = DispatchSemaphore(value: 0)
        let connected = DispatchSemaphore(value: 0)
        let firstFrame = DispatchSemaphore(value: 0)

        func read<T>(_ body: (Observations) -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body(self)
        }
    }

    let seen = Observations()
    let endpoint: PusherEndpoint
    let process = Process()
    let startedNs = MonotonicClock.nowNs()
    private let runtime: String

    /// Serves `group` in a private XDG_RUNTIME_DIR and starts the helper (`{group}` replaced).
    init(command: [String], group: String, maxWidth: UInt32, maxHeight: UInt32, announce: String?) throws {
        var template = Array("/tmp/lpcheck-XXXXXX".utf8CString)
        guard let pointer = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CheckHelperFailure(text: "cannot create a private directory in /tmp")
        }
        runtime = String(cString: pointer)
        var configuration = PusherEndpointConfiguration(group: group)
        configuration.runtimeDirectory = runtime
        configuration.maxWidth = maxWidth
        configuration.maxHeight = maxHeight
        let box = Mutex<PusherEndpoint?>(nil)
        let seen = self.seen, startedNs = self.startedNs
        do {
            endpoint = try PusherEndpoint(configuration: configuration) { event in
                Self.record(event, into: seen, endpoint: box, startedNs: startedNs)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: runtime)
            throw CheckHelperFailure(text: "\(error)")
        }
        box.withLock { $0 = endpoint }
        let arguments = command.dropFirst().map { $0 == "{group}" ? group : $0 }
        if let announce {
            print("check-helper: running '\(([command[0]] + arguments).joined(separator: " "))' \(announce)")
        }
        fflush(nil)  // before the helper's own output
        process.executableURL = URL(fileURLWithPath: Self.resolve(command[0]))
        process.arguments = Array(arguments)
        // The launch convention (SPEC §3.6): the group as {group}, LIVEPUSH_CAPTURE_GROUP, and a private
        // XDG_RUNTIME_DIR holding the socket. A helper under test is anyone's program: no stream key.
        var environment = ProcessInfo.processInfo.environment.merging(
            ["XDG_RUNTIME_DIR": runtime, "LIVEPUSH_CAPTURE_GROUP": group]) { $1 }
        environment[PushURLSources.environmentVariable] = nil
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            endpoint.stop()
            try? FileManager.default.removeItem(atPath: runtime)
            throw CheckHelperFailure(text: "cannot run \(command[0]): \(error)")
        }
    }

    /// Waits for the helper to exit: its status, or nil if it was still running (it is then terminated).
    func waitForExit(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        guard !process.isRunning else {
            kill(process: process)
            return nil
        }
        return process.terminationStatus
    }

    /// SIGTERM, then SIGKILL after 1 s (a helper may ignore SIGTERM: it may have inherited SIG_IGN).
    private func kill(process: Process) {
        process.terminate()
        let deadline = Date().addingTimeInterval(1)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Stops the endpoint and the helper, removes the private directory.
    func finish() {
        endpoint.stop()
        if process.isRunning { kill(process: process) }
        try? FileManager.default.removeItem(atPath: runtime)
    }

    /// True when the session ended (FINISH, lost, violation, rejection) within `seconds`.
    func waitForEnd(seconds: Double) -> Bool {
        if seen.read({ $0.endedAtNs != 0 }) { return true }
        guard seen.ended.wait(timeout: .now() + seconds) == .success else { return false }
        seen.ended.signal()  // the end stays observable
        return true
    }

    /// True when the helper sent its first frame within `seconds`.
    func waitForFirstFrame(seconds: Double) -> Bool {
        if seen.read({ $0.frames > 0 }) { return true }
        guard seen.firstFrame.wait(timeout: .now() + seconds) == .success else { return false }
        seen.firstFrame.signal()
        return true
    }

    private static func record(_ event: CaptureLinkEvent, into seen: Observations,
                               endpoint: borrowing Mutex<PusherEndpoint?>, startedNs: UInt64) {
        if case .frame = event {
            // Borrow and return at once, as a consumer that keeps up would.
            endpoint.withLock { $0 }?.acquireLatestFrame()?.release()
        }
        let nowNs = MonotonicClock.nowNs()
        seen.lock.lock()
        defer { seen.lock.unlock() }
        var ends = false
        switch event {
        case .connected(let info):
            seen.connections += 1
            if seen.helper == nil {
                seen.helper = info
                seen.connectedAfterMs = Int((nowNs - startedNs) / 1_000_000)
                seen.connected.signal()
            }
        case .started(let info):
            seen.started = info
        case .frame(let info):
            if seen.frames == 0 {
                seen.firstFrameNs = nowNs
                seen.firstFrame.signal()
            }
            seen.frames += 1
            seen.lastFrameNs = nowNs
            seen.frameLog.append((nowNs, info.width, info.height))
        case .unchangedFrame:
            seen.unchangedFrames += 1
        case .audio:
            seen.audioMessages += 1
        case .paused, .resumed:
            break
        case .finished(let code, let text):
            seen.finished = (code, text, nowNs)
            ends = true
        case .lost(let reason):
            seen.lost = reason
            ends = true
        case .violation(let violation, let message):
            seen.violation = (violation, message)
            ends = true
        case .rejected(let code, let reason):
            seen.rejection = (code, reason)
            ends = true
        case .implausibleTimestamp(let warning):
            if seen.implausibleTimestamp == nil { seen.implausibleTimestamp = warning }
        }
        if ends && seen.endedAtNs == 0 {
            seen.endedAtNs = nowNs
            seen.ended.signal()
        }
    }

    private static func resolve(_ name: String) -> String {
        if name.contains("/") { return name }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return name
    }
}

struct CheckHelperFailure: Error, CustomStringConvertible {
    let text: String
    var description: String { text }
}
