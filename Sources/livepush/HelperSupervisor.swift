import Foundation
import LinuxSystem
import SafeText

/// Runs the capture helper `livepush screen` started and keeps it running: when it dies (a
/// non-zero exit or a signal) it says why and starts it again. A helper that had been working
/// (it started capturing, `markCapturing`, or ran `stableAfterSeconds`) is restarted at once;
/// one that failed before that is a fast failure, and fast failures in a row are restarted at
/// once, then after 1 s, 2 s, and 5 s from then on, until `maxFastFailures` of them in a row
/// make it give up.
/// A helper that exits 0 finished on purpose (its window closed, it was asked to stop) and a
/// usage error (exit 2) will not get better: neither is restarted. Exit 78 (EX_CONFIG, SPEC
/// §13.5) says the helper's configuration is wrong: the run stops at once with its message,
/// unless a helper with the same options has captured in this run already (the configuration
/// worked: what it names, a PipeWire node after a daemon restart say, may come back), when it
/// is restarted like any other failure.
final class HelperSupervisor: @unchecked Sendable {
    let executable: URL
    let arguments: [String]
    static let backoffSeconds: [Double] = [0, 1, 2, 5]
    let stableAfterSeconds: Double = 10
    let maxFastFailures = 5
    /// Each line the helper prints.
    var onLine: (@Sendable (String) -> Void)?
    /// Why the helper died and what happens next.
    var onNote: (@Sendable (String) -> Void)?
    /// The helper finished on purpose (exit 0) or cannot be helped (exit 2): the run ends.
    var onFinished: (@Sendable (Int32) -> Void)?
    /// Restarting did not help: the run ends with this error.
    var onGaveUp: (@Sendable (String) -> Void)?

    private let lock = NSLock()
    private var process: Process?
    private var stopping = false
    private var fastFailures = 0
    /// The running helper started capturing: it works, its death is not a fast failure.
    private var capturing = false
    /// Some helper of this run started capturing: its configuration can work.
    private var everCaptured = false
    private(set) var restarts = 0
    /// The last line the running helper printed: its reason, when it exits 78.
    private var lastLine = ""
    private var outputEnded = false

    /// The helper's whole environment (the starter decides: no LIVEPUSH_URL, issue 30).
    let environment: [String: String]

    init(executable: URL, arguments: [String], environment: [String: String]) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
    }

    /// The running helper's pid, or nil between runs.
    var processIdentifier: Int32? { lock.withLock { process?.isRunning == true ? process?.processIdentifier : nil } }

    func start() throws {
        let helper = Process()
        helper.executableURL = executable
        helper.arguments = arguments
        helper.environment = environment
        let output = Pipe()
        helper.standardError = output
        helper.standardOutput = output
        helper.standardInput = FileHandle.nullDevice
        let startedAt = Date()
        helper.terminationHandler = { [weak self] process in self?.ended(process, startedAt: startedAt) }
        try helper.run()
        lock.withLock {
            process = helper
            capturing = false
            outputEnded = false
            lastLine = ""
        }
        let reader = Thread { [weak self] in
            ThreadName.setCurrent("livepush-helper")
            var pending = Data()
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty {
                    // The helper is gone: close our end now (one pipe per restart would leak).
                    try? output.fileHandleForReading.close()
                    self?.lock.withLock { self?.outputEnded = true }
                    break
                }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    // A helper is a stranger: what it prints is shown neutralised (SPEC §2.3).
                    let line = UntrustedText.neutralised(String(decoding: pending[pending.startIndex..<newline],
                                                                as: UTF8.self))
                    pending.removeSubrange(pending.startIndex...newline)
                    self?.lock.withLock { self?.lastLine = line }
                    self?.onLine?(line)
                }
            }
        }
        reader.start()
    }

    /// The running helper started sending the screen.
    func markCapturing() {
        lock.withLock {
            capturing = true
            everCaptured = true
        }
    }

    /// From now on the helper's end is expected: no restart, no note.
    func expectEnd() { lock.withLock { stopping = true } }

    /// Stops the helper: SIGTERM (it finishes its session), SIGKILL after `graceSeconds`.
    func stop(graceSeconds: Double = 1) {
        let helper = lock.withLock { () -> Process? in
            stopping = true
            return process
        }
        guard let helper, helper.isRunning else { return }
        helper.terminate()
        let deadline = Date().addingTimeInterval(graceSeconds)
        while helper.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if helper.isRunning { Foundation.kill(helper.processIdentifier, SIGKILL) }
        helper.waitUntilExit()
    }

    /// Kills the helper at once (a forced exit).
    func killNow() {
        if let pid = processIdentifier { Foundation.kill(pid, SIGKILL) }
    }

    private func ended(_ helper: Process, startedAt: Date) {
        let ranSeconds = Date().timeIntervalSince(startedAt)
        let status = helper.terminationStatus
        let bySignal = helper.terminationReason == .uncaughtSignal
        let (stopping, failures, configurationWorked) = lock.withLock { () -> (Bool, Int, Bool) in
            if capturing || ranSeconds >= stableAfterSeconds { fastFailures = 0 }
            if bySignal || status != 0 { fastFailures += 1 }
            return (self.stopping, fastFailures, everCaptured)
        }
        if stopping { return }
        let why = bySignal ? "was killed by signal \(status) (\(Self.signalName(status)))" : "exited with status \(status)"
        if !bySignal && (status == 0 || status == 2) {
            onNote?("the capture helper \(why)")
            onFinished?(status)
            return
        }
        if !bySignal && status == Self.configurationStatus && !configurationWorked {
            // The output reader may still hold the last line for a moment: wait for the pipe's end.
            let message = lastLineAfterOutputEnds()
            onGaveUp?("the capture helper cannot run with its configuration (exit status 78): "
                + (message.isEmpty ? "it gave no reason" : message) + "; fix the capture options, it is not restarted")
            return
        }
        if failures >= maxFastFailures {
            onGaveUp?("the capture helper \(why); it failed \(failures) times in a row before sending the screen, "
                + "so it is not restarted again (see its messages above)")
            return
        }
        let delay = Self.backoffSeconds[min(max(0, failures - 1), Self.backoffSeconds.count - 1)]
        onNote?("the capture helper \(why) after \(String(format: "%.1f", ranSeconds)) s; restarting it"
            + (delay > 0 ? " in \(Int(delay)) s" : ""))
        Thread.detachNewThread { [weak self] in
            ThreadName.setCurrent("livepush-retry")
            Thread.sleep(forTimeInterval: delay)
            guard let self, !self.lock.withLock({ self.stopping }) else { return }
            do {
                try self.start()
                self.lock.withLock { self.restarts += 1 }
            } catch {
                self.onGaveUp?("cannot start the capture helper again: \(error)")
            }
        }
    }

    /// EX_CONFIG: "my configuration is wrong, do not restart me" (SPEC §13.5).
    static let configurationStatus: Int32 = 78

    private func lastLineAfterOutputEnds() -> String {
        let deadline = Date().addingTimeInterval(0.5)
        while Date() < deadline && !lock.withLock({ outputEnded }) { Thread.sleep(forTimeInterval: 0.01) }
        let line = lock.withLock { lastLine }
        return line.replacingOccurrences(of: "livepush-capture: ", with: "")
    }

    static func signalName(_ number: Int32) -> String {
        switch number {
        case SIGKILL: "SIGKILL"
        case SIGTERM: "SIGTERM"
        case SIGSEGV: "SIGSEGV"
        case SIGABRT: "SIGABRT"
        case SIGINT: "SIGINT"
        case SIGBUS: "SIGBUS"
        case SIGILL: "SIGILL"
        case SIGTRAP: "SIGTRAP"
        case SIGFPE: "SIGFPE"
        default: "signal \(number)"
        }
    }
}
