import CaptureLink
import CommandLineSupport
import Foundation
import Synchronization

/// `livepush check-helper -- COMMAND ARGS...`: runs any capture helper against a pusher
/// endpoint of its own and reports each rule of the Capture Link specification as pass or fail.
enum CheckHelper {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "How long to let the helper send frames (default 5)."),
        .value("group", valueName: "NAME", help: "Group name to serve (default check)."),
        .value("max-size", valueName: "WxH", help: "Largest frame the endpoint accepts (default 3840x2160)."),
        .flag("help", short: "h", help: "Show this help."),
    ]

    static let spec = CommandSpec(
        name: "check-helper",
        summary: "Run a capture helper and check it against the Capture Link specification.",
        synopsis: ["livepush check-helper [--seconds N] [--group NAME] [--max-size WxH] -- COMMAND [ARGS...]"],
        description: """
            Runs COMMAND as a Capture Link helper against a private pusher endpoint, lets it send
            frames for N seconds, asks it to stop, and reports each rule of protocol/SPEC.md as pass
            or fail, quoting the offending message. Exits with 1 when any rule fails.
            The helper finds the endpoint through XDG_RUNTIME_DIR (set to a private directory) and
            the group: an argument written {group} is replaced by the group name, which is also in
            LIVEPUSH_CAPTURE_GROUP.
            """,
        sections: [OptionSection("Options", options)],
        arguments: .file,
        examples: [Example("livepush check-helper -- ./my-helper --group {group}",
                           "Grades ./my-helper against every rule of protocol/SPEC.md.")])

    static var usage: String { spec.help }

    /// What the checker saw, filled on the link thread.
    final class Observations: @unchecked Sendable {
        let lock = NSLock()
        var connectedAfterMs: Int?
        var helper: HelperInfo?
        var started: String?
        var frames = 0
        var unchangedFrames = 0
        var audioMessages = 0
        var firstFrameNs: UInt64 = 0
        var lastFrameNs: UInt64 = 0
        var finished: (code: UInt32, text: String, atNs: UInt64)?
        var lost: String?
        var violation: (ProtocolViolation, [UInt8])?
        var rejection: (ErrorCode, String)?
        let ended = DispatchSemaphore(value: 0)
    }

    static func main(_ arguments: [String]) -> Never {
        let parsed: ParsedArguments
        do {
            parsed = try ArgumentParser.parse(arguments, options: options)
        } catch {
            Terminal.printError("livepush check-helper: \(error)\n\(usage)")
            Terminal.exit(.usage)
        }
        if parsed.has("help") {
            print(usage)
            Terminal.exit(.success)
        }
        guard !parsed.positionals.isEmpty else {
            Terminal.printError("livepush check-helper: missing the helper command after --\n\(usage)")
            Terminal.exit(.usage)
        }
        let seconds = Double(parsed.value("seconds") ?? "5") ?? 5
        let group = parsed.value("group") ?? "check"
        let maxSize = (parsed.value("max-size") ?? "3840x2160").split(separator: "x").compactMap { UInt32($0) }
        guard maxSize.count == 2, Rendezvous.isValidGroup(group) else {
            Terminal.printError("livepush check-helper: --max-size must be WxH and --group [A-Za-z0-9._-]{1,64}")
            Terminal.exit(.usage)
        }
        let failures = run(command: parsed.positionals, group: group, seconds: seconds, maxWidth: maxSize[0],
                           maxHeight: maxSize[1])
        Terminal.exit(failures == 0 ? .success : .failure)
    }

    /// Runs the check; returns the number of failed rules.
    static func run(command: [String], group: String, seconds: Double, maxWidth: UInt32, maxHeight: UInt32) -> Int {
        var template = Array("/tmp/lpcheck-XXXXXX".utf8CString)
        guard let runtimePointer = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            Terminal.printError("livepush check-helper: cannot create a private directory in /tmp")
            return 1
        }
        let runtime = String(cString: runtimePointer)
        defer { try? FileManager.default.removeItem(atPath: runtime) }

        let seen = Observations()
        let endpointBox = Mutex<PusherEndpoint?>(nil)
        let startedNs = MonotonicClock.nowNs()
        var configuration = PusherEndpointConfiguration(group: group)
        configuration.runtimeDirectory = runtime
        configuration.maxWidth = maxWidth
        configuration.maxHeight = maxHeight
        let endpoint: PusherEndpoint
        do {
            endpoint = try PusherEndpoint(configuration: configuration) { event in
                record(event, into: seen, endpoint: endpointBox, startedNs: startedNs)
            }
        } catch {
            Terminal.printError("livepush check-helper: \(error)")
            return 1
        }
        endpointBox.withLock { $0 = endpoint }
        defer { endpoint.stop() }

        let arguments = command.dropFirst().map { $0 == "{group}" ? group : $0 }
        print("check-helper: running '\(([command[0]] + arguments).joined(separator: " "))' "
            + "for \(formatSeconds(seconds)) on group '\(group)'")
        fflush(nil)  // before the helper's own output
        let process = Process()
        process.executableURL = URL(fileURLWithPath: resolve(command[0]))
        process.arguments = Array(arguments)
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["XDG_RUNTIME_DIR": runtime, "LIVEPUSH_CAPTURE_GROUP": group]) { $1 }
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            Terminal.printError("livepush check-helper: cannot run \(command[0]): \(error)")
            return 1
        }
        // Let it run; stop early if the session ended on its own.
        let sessionEndedEarly = seen.ended.wait(timeout: .now() + seconds) == .success
        var stopAnsweredMs: Int?
        if !sessionEndedEarly && seen.lock.withLock({ seen.helper != nil }) {
            let stopSentNs = MonotonicClock.nowNs()
            endpoint.requestStop(text: "check-helper: time is up")
            if seen.ended.wait(timeout: .now() + 1.5) == .success,
               let finishNs = seen.lock.withLock({ seen.finished?.atNs }) {
                stopAnsweredMs = Int((finishNs - stopSentNs) / 1_000_000)
            }
        }
        let exitDeadline = Date().addingTimeInterval(2)
        while process.isRunning && Date() < exitDeadline { Thread.sleep(forTimeInterval: 0.02) }
        let exitedInTime = !process.isRunning
        if !exitedInTime {
            process.terminate()
            process.waitUntilExit()
        }
        return report(seen, sessionEndedEarly: sessionEndedEarly, stopAnsweredMs: stopAnsweredMs,
                      exitStatus: exitedInTime ? process.terminationStatus : nil)
    }

    private static func record(_ event: CaptureLinkEvent, into seen: Observations, endpoint: borrowing Mutex<PusherEndpoint?>,
                               startedNs: UInt64) {
        if case .frame = event {
            // Borrow and return at once, as a consumer that keeps up would.
            endpoint.withLock { $0 }?.acquireLatestFrame()?.release()
        }
        let nowNs = MonotonicClock.nowNs()
        seen.lock.lock()
        defer { seen.lock.unlock() }
        switch event {
        case .connected(let info):
            seen.helper = info
            seen.connectedAfterMs = Int((nowNs - startedNs) / 1_000_000)
        case .started(let info):
            seen.started = info
        case .frame:
            if seen.frames == 0 { seen.firstFrameNs = nowNs }
            seen.frames += 1
            seen.lastFrameNs = nowNs
        case .unchangedFrame:
            seen.unchangedFrames += 1
        case .audio:
            seen.audioMessages += 1
        case .paused, .resumed:
            break
        case .finished(let code, let text):
            seen.finished = (code, text, nowNs)
            seen.ended.signal()
        case .lost(let reason):
            seen.lost = reason
            seen.ended.signal()
        case .violation(let violation, let message):
            seen.violation = (violation, message)
            seen.ended.signal()
        case .rejected(let code, let reason):
            seen.rejection = (code, reason)
            seen.ended.signal()
        }
    }

    /// Prints one line per rule; returns how many failed.
    private static func report(_ seen: Observations, sessionEndedEarly: Bool, stopAnsweredMs: Int?, exitStatus: Int32?)
        -> Int
    {
        seen.lock.lock()
        defer { seen.lock.unlock() }
        var failures = 0
        func line(_ pass: Bool, _ rule: String, _ detail: String) {
            print("\(pass ? "pass" : "FAIL")  \(rule): \(detail)")
            if !pass { failures += 1 }
        }

        if let helper = seen.helper {
            line(true, "connect", "helper connected and said HELLO after \(seen.connectedAfterMs ?? 0) ms")
            let formats = helper.pixelFormats.map(\.description).joined(separator: " ")
            line(true, "HELLO", "\(helper.name) \(helper.version), Capture Link \(helper.protocolVersion), "
                + "formats \(formats), max \(helper.maxWidth)x\(helper.maxHeight)")
        } else if let (code, _) = seen.rejection {
            print("--    HELLO: refused with \(code.name) (below)")
        } else if seen.violation != nil {
            print("--    HELLO: not completed (the broken rule is below)")
        } else {
            line(false, "connect", "the helper never completed HELLO (\(seen.lost ?? "it did not connect"))")
        }

        // One line per rule of the specification that a helper can break.
        let helperRules: [ErrorCode] = [
            .truncated, .badLength, .badMagic, .reserved, .unknownType, .descriptors, .version, .state, .text,
            .badSlot, .slotNotOwned, .sequence, .format, .geometry, .audio, .timeout,
        ]
        let hung = seen.lost?.hasPrefix("helper hung") == true
        let broken = seen.violation?.0.code ?? seen.rejection?.0 ?? (hung ? .timeout : nil)
        for rule in helperRules {
            guard rule == broken else {
                line(true, rule.name, "no violation")
                continue
            }
            if let (violation, message) = seen.violation {
                line(false, rule.name, "\(violation.detail)\n      message: \(hexDump(message))")
            } else if let (_, reason) = seen.rejection {
                line(false, rule.name, "REJECT: \(reason)")
            } else {
                line(false, rule.name, seen.lost ?? "")
            }
        }

        // The lifecycle, unless a broken rule already ended the session.
        if broken != nil {
            print("--    lifecycle: not checked further; the session ended at the rule above")
        } else {
            if let info = seen.started {
                line(true, "START", info.count > 80 ? String(info.prefix(77)) + "..." : info)
            } else if seen.helper != nil {
                line(false, "START", "the helper never sent START")
            }
            if seen.frames > 0 {
                let spanS = Double(seen.lastFrameNs - seen.firstFrameNs) / 1e9
                let fps = spanS > 0 ? Double(seen.frames - 1) / spanS : 0
                var detail = String(format: "%d frames at %.1f fps, every one valid", seen.frames, fps)
                if seen.unchangedFrames > 0 { detail += ", \(seen.unchangedFrames) unchanged" }
                if seen.audioMessages > 0 { detail += ", \(seen.audioMessages) AUDIO messages" }
                line(true, "frames", detail)
            } else if seen.helper != nil {
                line(false, "frames", "no FRAME arrived")
            }
            if sessionEndedEarly {
                if let finished = seen.finished {
                    line(true, "FINISH", "the helper finished on its own (reason \(finished.code): \(finished.text))")
                } else if let lost = seen.lost {
                    line(false, "FINISH", "the session ended without FINISH: \(lost)")
                }
            } else if seen.helper != nil {
                if let ms = stopAnsweredMs {
                    line(true, "STOP", "answered with FINISH in \(ms) ms")
                } else {
                    line(false, "STOP", "no FINISH within 1 s of STOP")
                }
            }
        }
        if let status = exitStatus {
            line(status == 0 || broken != nil, "exit", "the helper exited with status \(status)")
        } else {
            line(false, "exit", "the helper was still running 2 s after the session ended; it was terminated")
        }
        print(failures == 0 ? "check-helper: all rules pass" : "check-helper: \(failures) rule(s) failed")
        return failures
    }

    static func hexDump(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "(none)" : bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
    }

    private static func formatSeconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
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
