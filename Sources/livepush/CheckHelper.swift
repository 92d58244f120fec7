import CaptureLink
import CommandLineSupport
import Foundation
import LinuxSystem
import Synchronization

/// `livepush check-helper -- COMMAND ARGS...`: runs any capture helper against a pusher
/// endpoint of its own and reports each rule of the Capture Link specification as pass or fail.
enum CheckHelper {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "How long to let the helper send frames (default 5)."),
        .value("group", valueName: "NAME", help: "Group name to serve (default check)."),
        .value("max-size", valueName: "WxH", help: "Largest frame the endpoint accepts (default 3840x2160)."),
        .flag("no-paths", help: "Check the rules of one session only, not the paths a helper must handle."),
        .flag("help", short: "h", help: "Show this help."),
    ]

    static let spec = CommandSpec(
        name: "check-helper",
        summary: "Run a capture helper and check it against the Capture Link specification.",
        synopsis: ["livepush check-helper [--seconds N] [--group NAME] [--max-size WxH] [--no-paths] -- COMMAND [ARGS...]"],
        description: """
            Runs COMMAND as a Capture Link helper against a private pusher endpoint, lets it send
            frames for N seconds, asks it to stop, and reports each rule of protocol/SPEC.md as pass
            or fail, quoting the offending message. When every rule passes it then tries each path a
            helper must handle, each a pass/fail line: a CONFIG after START (the frames that follow
            are measured), RELEASEs withheld, an unknown optional message, STOP while capturing; and,
            each with the helper started again, STOP right after WELCOME, a silent pusher, an ERROR
            from the pusher, an unknown message type without LPC_FLAG_OPTIONAL.
            Exits with 1 when any rule or path fails.
            The helper is started as SPEC.md §3.6 says: an argument written {group} is replaced by the
            group name, which is also in LIVEPUSH_CAPTURE_GROUP, and XDG_RUNTIME_DIR is a private
            directory holding the group's socket. Write it where your helper takes its group, in the
            conventional form --group {group} (what liblivepush-capture's lpc_group_from_args() and
            the Python package's group_from_args() read, and how livepush starts a helper).
            """,
        sections: [OptionSection("Options", options)],
        arguments: .file,
        examples: [Example("livepush check-helper -- ./my-helper --group {group}",
                           "Grades ./my-helper against every rule of protocol/SPEC.md and every path a helper must handle.")])

    static var usage: String { spec.help }

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
                           maxHeight: maxSize[1], paths: !parsed.has("no-paths"))
        Terminal.exit(failures == 0 ? .success : .failure)
    }

    /// Runs the check; returns the number of failed rules and paths.
    static func run(command: [String], group: String, seconds: Double, maxWidth: UInt32, maxHeight: UInt32,
                    paths: Bool) -> Int {
        let session: CheckSession
        do {
            session = try CheckSession(command: command, group: group, maxWidth: maxWidth, maxHeight: maxHeight,
                                       announce: "for \(formatSeconds(seconds)) on group '\(group)'")
        } catch {
            Terminal.printError("livepush check-helper: \(error)")
            return 1
        }
        defer { session.finish() }
        let seen = session.seen
        // Let it run; stop early if the session ended on its own.
        let sessionEndedEarly = session.waitForEnd(seconds: seconds)
        // The frames line measures the plain session, before the paths change the pace.
        let plain = seen.read { (count: $0.frames, firstNs: $0.firstFrameNs, lastNs: $0.lastFrameNs) }
        var probes: [PathResult] = []
        if paths && !sessionEndedEarly && seen.read({ $0.helper != nil && $0.violation == nil && $0.frames > 0 }) {
            probes = CheckHelperPaths.probeLiveSession(session)
        }
        let sessionEndedByProbe = seen.read { $0.endedAtNs != 0 }
        var stopAnsweredMs: Int?
        if !sessionEndedEarly && !sessionEndedByProbe && seen.read({ $0.helper != nil }) {
            let stopSentNs = MonotonicClock.nowNs()
            session.endpoint.requestStop(text: "check-helper: time is up")
            if session.waitForEnd(seconds: 1.5), let finishNs = seen.read({ $0.finished?.atNs }) {
                stopAnsweredMs = Int((finishNs - stopSentNs) / 1_000_000)
            }
        }
        let exitStatus = session.waitForExit(seconds: 2)
        var failures = report(seen, sessionEndedEarly: sessionEndedEarly, stopAnsweredMs: stopAnsweredMs,
                              exitStatus: exitStatus, probes: probes, plainFrames: plain)
        if paths && failures == 0 && !sessionEndedEarly {
            failures += CheckHelperPaths.runSeparateSessions(command: command, group: group, maxWidth: maxWidth,
                                                             maxHeight: maxHeight)
        }
        print(failures == 0 ? "check-helper: all rules pass" : "check-helper: \(failures) rule(s) failed")
        return failures
    }

    /// Prints one line per rule; returns how many failed.
    private static func report(_ seen: CheckSession.Observations, sessionEndedEarly: Bool, stopAnsweredMs: Int?,
                               exitStatus: Int32?, probes: [PathResult],
                               plainFrames: (count: Int, firstNs: UInt64, lastNs: UInt64)) -> Int
    {
        seen.lock.lock()
        defer { seen.lock.unlock() }
        var failures = 0
        func line(_ pass: Bool, _ rule: String, _ detail: String) {
            print("\(pass ? "pass" : "FAIL")  \(rule): \(detail)")
            if !pass { failures += 1 }
        }
        let probesEnded = probes.contains { !$0.pass }

        if let helper = seen.helper {
            line(true, "connect", "helper connected and said HELLO after \(seen.connectedAfterMs ?? 0) ms")
            let formats = helper.pixelFormats.map(\.description).joined(separator: " ")
            let granted = helper.maxWidth == helper.helloMaxWidth && helper.maxHeight == helper.helloMaxHeight
                ? "" : " (granted \(helper.maxWidth)x\(helper.maxHeight))"
            line(true, "HELLO", "\(helper.name) \(helper.version), Capture Link \(helper.protocolVersion), "
                + "formats \(formats), max \(helper.helloMaxWidth)x\(helper.helloMaxHeight)\(granted)")
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
            for probe in probes { line(probe.pass, probe.name, probe.detail) }
            print("--    lifecycle: not checked further; the session ended at the rule above")
        } else {
            if let info = seen.started {
                line(true, "START", info.count > 80 ? String(info.prefix(77)) + "..." : info)
            } else if seen.helper != nil {
                line(false, "START", "the helper never sent START")
            }
            if seen.frames > 0 {
                let spanS = Double(plainFrames.lastNs - plainFrames.firstNs) / 1e9
                let fps = spanS > 0 ? Double(plainFrames.count - 1) / spanS : 0
                var detail = String(format: "%d frames at %.1f fps, every one valid", plainFrames.count, fps)
                if seen.unchangedFrames > 0 { detail += ", \(seen.unchangedFrames) unchanged" }
                if seen.audioMessages > 0 { detail += ", \(seen.audioMessages) AUDIO messages" }
                line(true, "frames", detail)
            } else if seen.helper != nil {
                line(false, "frames", "no FRAME arrived")
            }
            if seen.frames > 0 || seen.audioMessages > 0 {
                // SPEC §9: not a violation (the pusher uses the arrival time), but a clock to fix.
                if let warning = seen.implausibleTimestamp {
                    line(false, "timestamps", "\(warning.message).pts_ns \(warning.aheadMs) ms ahead of CLOCK_MONOTONIC: "
                        + "stamp each frame and AUDIO with clock_gettime(CLOCK_MONOTONIC) at capture")
                } else {
                    line(true, "timestamps", "every pts_ns within 1 s of the pusher's CLOCK_MONOTONIC")
                }
            }
            for probe in probes { line(probe.pass, probe.name, probe.detail) }
            if probesEnded {
                print("--    STOP: not checked; the path above failed")
            } else if sessionEndedEarly {
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
            line(status == 0 || broken != nil || probesEnded, "exit", "the helper exited with status \(status)")
        } else {
            line(false, "exit", "the helper was still running 2 s after the session ended; it was terminated")
        }
        return failures
    }

    static func hexDump(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "(none)" : bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
    }

    static func formatSeconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}
