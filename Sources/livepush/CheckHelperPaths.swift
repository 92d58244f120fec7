import CaptureLink
import Foundation
import LinuxSystem

/// One path of `livepush check-helper` and how the helper handled it.
struct PathResult {
    let name: String
    let pass: Bool
    let detail: String
}

/// The paths a helper must handle besides the happy one (SPEC §5.12, §7, §11, §12.7, §13.3,
/// §14.4), each tried on purpose by the checker's pusher and graded by what it then saw.
enum CheckHelperPaths {
    // MARK: In the running session

    /// CONFIG after START, an optional unknown message, RELEASEs withheld; stops at the first
    /// path that ends the session.
    static func probeLiveSession(_ session: CheckSession) -> [PathResult] {
        var results: [PathResult] = []
        for probe in [config, optionalUnknownType, withheldReleases] {
            let result = probe(session)
            results.append(result)
            if !result.pass { break }
        }
        return results
    }

    private static func endedText(_ session: CheckSession) -> String {
        session.seen.read { seen in
            if let (violation, _) = seen.violation { return "\(violation.code.name): \(violation.detail)" }
            if let finished = seen.finished { return "FINISH \(finished.code): \(finished.text)" }
            return seen.lost ?? "the session ended"
        }
    }

    /// SPEC §5.12, §12.5: half the size and half the rate; the frames from 250 ms later on are measured.
    private static func config(_ session: CheckSession) -> PathResult {
        let name = "CONFIG after START"
        guard let helper = session.seen.read({ $0.helper }) else { return PathResult(name: name, pass: false, detail: "") }
        let fps = max(1, session.endpoint.configuration.fps / 2)
        let width = max(1, helper.maxWidth / 2), height = max(1, helper.maxHeight / 2)
        let sentNs = MonotonicClock.nowNs()
        let sizeBefore = session.seen.read { $0.frameLog.last.map { (width: $0.width, height: $0.height) } }
        session.endpoint.sendConfig(Config(fps: fps, maxWidth: width, maxHeight: height, cursor: false))
        if session.waitForEnd(seconds: 1.8) {
            return PathResult(name: name, pass: false, detail: "the session ended after CONFIG: \(endedText(session))")
        }
        let after = session.seen.read { $0.frameLog.filter { $0.ns >= sentNs + 250_000_000 } }
        // Back to the first wishes for the paths that follow.
        session.endpoint.sendConfig(Config(fps: session.endpoint.configuration.fps, maxWidth: helper.maxWidth,
                                           maxHeight: helper.maxHeight, cursor: false))
        let wanted = "CONFIG {\(fps) fps, max \(width)x\(height)}"
        guard after.count >= 5, let first = after.first, let last = after.last, last.ns > first.ns else {
            return PathResult(name: name, pass: false, detail: "\(after.count) frames in the 1.5 s after \(wanted)")
        }
        let measuredFps = Double(after.count - 1) / (Double(last.ns - first.ns) / 1e9)
        let oversized = after.filter { $0.width > Int(width) || $0.height > Int(height) }
        let sizes = Set(after.map { "\($0.width)x\($0.height)" }).sorted().joined(separator: ", ")
        let detail = String(format: "after %@: %d frames at %.1f fps, sizes %@", wanted, after.count, measuredFps, sizes)
        let rateOK = abs(measuredFps - Double(fps)) <= Double(fps) * 0.25
        // LPC_CAP_SCALE (SPEC clarification 28): the whole picture scaled, the aspect kept (±1 px), never cropped.
        var scaledOK = true
        if helper.capabilities.contains(.scale), let before = sizeBefore, before.width > 0, before.height > 0 {
            scaledOK = after.allSatisfy { frame in
                abs(frame.width * before.height - frame.height * before.width) <= max(before.width, before.height)
                    && (frame.width == Int(width) || frame.height == Int(height)
                        || (before.width <= Int(width) && before.height <= Int(height)))
            }
        }
        return PathResult(name: name, pass: oversized.isEmpty && rateOK && scaledOK,
                          detail: detail + (oversized.isEmpty ? "" : " (larger than CONFIG's maximum)")
                              + (rateOK ? "" : " (not within 25% of \(fps) fps)")
                              + (scaledOK ? "" : " (LPC_CAP_SCALE granted, but not the whole picture scaled to fit, "
                                  + "aspect kept; it was \(sizeBefore.map { "\($0.width)x\($0.height)" } ?? "?"))"))
    }

    /// SPEC §14.4: a type the helper cannot know, with LPC_FLAG_OPTIONAL, is ignored.
    private static func optionalUnknownType(_ session: CheckSession) -> PathResult {
        let name = "optional unknown type"
        let framesBefore = session.seen.read { $0.frames }
        session.endpoint.sendRaw(type: 0xF0A1, flags: 0x0001, payload: [1, 2, 3, 4])
        if session.waitForEnd(seconds: 0.6) {
            return PathResult(name: name, pass: false, detail: "type 0xF0A1 with LPC_FLAG_OPTIONAL ended the session: "
                + endedText(session))
        }
        let framesAfter = session.seen.read { $0.frames } - framesBefore
        return PathResult(name: name, pass: framesAfter > 0,
                          detail: "type 0xF0A1 with LPC_FLAG_OPTIONAL ignored; \(framesAfter) frames followed")
    }

    /// SPEC §7.5, §11: with every slot kept, the helper drops frames and keeps its heartbeats for
    /// longer than the pusher's timeout, never sends a slot it does not own, and goes on once
    /// the slots come back.
    private static func withheldReleases(_ session: CheckSession) -> PathResult {
        let name = "RELEASEs withheld"
        let timeoutMs = session.endpoint.configuration.peerTimeoutMs
        let holdSeconds = Double(timeoutMs) / 1000 + 0.6
        let framesBefore = session.seen.read { $0.frames }
        session.endpoint.setWithholdingReleases(true)
        let ended = session.waitForEnd(seconds: holdSeconds)
        let framesDuring = session.seen.read { $0.frames } - framesBefore
        session.endpoint.setWithholdingReleases(false)
        if ended {
            return PathResult(name: name, pass: false, detail: "with RELEASEs withheld the session ended: "
                + endedText(session))
        }
        let releasedNs = MonotonicClock.nowNs()
        let deadline = Date().addingTimeInterval(1.5)
        while session.seen.read({ $0.frames }) - framesBefore == framesDuring && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        guard let resumedNs = session.seen.read({ $0.frameLog.last.map(\.ns) }), resumedNs > releasedNs else {
            return PathResult(name: name, pass: false, detail: "no frame within 1.5 s of the slots coming back")
        }
        let detail = String(format: "for %.1f s the helper sent %d frames on its free slots and kept its heartbeats; "
            + "frames resumed %d ms after the RELEASEs", holdSeconds, framesDuring,
            Int((resumedNs - releasedNs) / 1_000_000))
        return PathResult(name: name, pass: true, detail: detail)
    }

    // MARK: Each in a session of its own

    /// Starts the helper again for each path that ends a session; prints each line; returns the failures.
    static func runSeparateSessions(command: [String], group: String, maxWidth: UInt32, maxHeight: UInt32) -> Int {
        var failures = 0
        let paths: [(String, (CheckSession) -> (Bool, String))] = [
            ("STOP right after WELCOME", stopAfterWelcome), ("silent pusher", silentPusher),
            ("ERROR from the pusher", errorFromPusher), ("unknown required type", requiredUnknownType),
        ]
        for (name, path) in paths {
            let (pass, detail): (Bool, String)
            do {
                let session = try CheckSession(command: command, group: group, maxWidth: maxWidth,
                                               maxHeight: maxHeight, announce: nil)
                (pass, detail) = path(session)
                session.finish()
            } catch {
                (pass, detail) = (false, "\(error)")
            }
            print("\(pass ? "pass" : "FAIL")  \(name): \(detail)")
            fflush(nil)
            if !pass { failures += 1 }
        }
        return failures
    }

    private static func exitText(_ status: Int32?) -> String {
        status.map { "exited with status \($0)" } ?? "was still running 2 s later (terminated)"
    }

    /// SPEC §12.7, §12.8: STOP is allowed from READY on; the answer is FINISH {USER} and exit 0.
    private static func stopAfterWelcome(_ session: CheckSession) -> (Bool, String) {
        guard session.seen.connected.wait(timeout: .now() + 15) == .success else {
            return (false, "the helper did not connect again within 15 s")
        }
        let sentNs = MonotonicClock.nowNs()
        session.endpoint.requestStop(text: "check-helper: STOP right after WELCOME")
        _ = session.waitForEnd(seconds: 1.5)
        let status = session.waitForExit(seconds: 2)
        guard let finished = session.seen.read({ $0.finished }) else {
            return (false, "no FINISH within 1 s of STOP; the helper \(exitText(status))")
        }
        let ms = (finished.atNs - sentNs) / 1_000_000
        return (finished.code == FinishReason.user.rawValue && status == 0,
                "FINISH \(finished.code) in \(ms) ms; the helper \(exitText(status))")
    }

    /// SPEC §11: a pusher silent for peer_timeout_ms is hung; the helper gives up with FINISH {ERROR}.
    private static func silentPusher(_ session: CheckSession) -> (Bool, String) {
        guard session.waitForFirstFrame(seconds: 15) else { return (false, "no frame within 15 s of starting") }
        let timeoutMs = UInt64(session.endpoint.configuration.peerTimeoutMs)
        let silentNs = MonotonicClock.nowNs()
        session.endpoint.setSilent(true)
        _ = session.waitForEnd(seconds: Double(timeoutMs) / 1000 + 2)
        let status = session.waitForExit(seconds: 2)
        guard let finished = session.seen.read({ $0.finished }) else {
            let other = session.seen.read { $0.endedAtNs != 0 } ? endedText(session) : "nothing"
            return (false, "no FINISH within \(timeoutMs + 2000) ms of silence (\(other)); the helper \(exitText(status))")
        }
        let ms = (finished.atNs - silentNs) / 1_000_000
        let inTime = ms + 100 >= timeoutMs && ms <= timeoutMs + 1500
        return (finished.code == FinishReason.error.rawValue && inTime && status != nil,
                "FINISH \(finished.code) (\(finished.text)) after \(ms) ms of silence (timeout \(timeoutMs) ms); "
                    + "the helper \(exitText(status))")
    }

    /// SPEC §13.3: on ERROR the helper closes and exits with a failure status, without reconnecting.
    private static func errorFromPusher(_ session: CheckSession) -> (Bool, String) {
        guard session.waitForFirstFrame(seconds: 15) else { return (false, "no frame within 15 s of starting") }
        session.endpoint.sendError(.state, text: "check-helper: a deliberate ERROR; the helper must stop")
        let status = session.waitForExit(seconds: 2)
        let connections = session.seen.read { $0.connections }
        let pass = status != nil && status != 0 && connections == 1
        return (pass, "the helper \(exitText(status))" + (connections > 1 ? " after connecting again" : ""))
    }

    /// SPEC §4.4 check 5: an unknown type without LPC_FLAG_OPTIONAL is a violation: FINISH {ERROR}.
    private static func requiredUnknownType(_ session: CheckSession) -> (Bool, String) {
        guard session.waitForFirstFrame(seconds: 15) else { return (false, "no frame within 15 s of starting") }
        session.endpoint.sendRaw(type: 0x00C1, flags: 0, payload: [])
        _ = session.waitForEnd(seconds: 1.5)
        let status = session.waitForExit(seconds: 2)
        guard let finished = session.seen.read({ $0.finished }) else {
            return (false, "no FINISH {ERROR} within 1 s of type 0x00C1; the helper \(exitText(status))")
        }
        return (finished.code == FinishReason.error.rawValue && status != nil,
                "FINISH \(finished.code) (\(finished.text)); the helper \(exitText(status))")
    }
}
