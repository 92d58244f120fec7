import Foundation
import Glibc
import Testing
import TestSupport

/// A helper can never take the broadcast down (issue 29): one `livepush screen` run per attack,
/// the attacker being the first helper its supervisor starts (Tests/Fixtures/hostile_helper.py,
/// through a wrapper), the C reference helper (tools/examples/pattern-helper.c) every later one.
/// Each case asserts what the attacker heard (the ERROR it earned, by name), what livepush said
/// (with every text of the helper's neutralised: no raw ESC or BEL in stderr, the events file or
/// the session report), that the attacker was replaced, and, in the recording (and at nginx for
/// the two that used to freeze the video), pictures that decode with no gap over 100 ms.
///
/// What is measured is what a helper can do to the pusher, so the pusher runs at a real-time
/// priority (`chrt -f 10`; CI runs as root): on the shared 2 cores, at loads of 11 to 15 from other
/// builds, a pusher at normal priority is starved for 100 to 170 ms at a session change with or
/// without an attacker (the same run with a well-behaved helper: 3 runs of 3 at normal priority,
/// none of 3 under chrt), which is the subject of the load tests (issue 29's part B), not of this
/// suite. The freezes this suite guards against were seconds long (6.8 s, and a deadlock).
/// Serialized: several runs at once would starve each other. `slot-not-owned` is not here: with a
/// consumer that gives each frame back as soon as it is converted (the video pipeline), reusing the
/// slot can be legal. The SIGSTOP of livepush-capture itself and a protocol breaker at nginx are in
/// HelperFaultTests.
@Suite(.serialized, .enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"),
       .timeLimit(.minutes(10)))
struct HostileHelperTests {
    struct Attack: Sendable, CustomTestStringConvertible {
        /// The fixture's case, or "sigstop" (the replacement helper itself is stopped).
        let name: String
        /// What the fixture printed (its verdict line); nil when it cannot say (killed, stopped).
        let verdict: String?
        /// Lines livepush must print (stderr).
        let said: [String]
        /// Also pushed to nginx, and the gaps checked there (the attacks that froze the video).
        var atNginx = false
        /// The attacker finished as planned (FINISH {USER}): the run ends by itself, nothing replaces it.
        var endsRun = false
        /// Stopped right after the attack (the sound it sent must already be in the file).
        var stopAtOnce = false
        /// Most warnings livepush may give with this text (rate limits).
        var atMost: (text: String, count: Int)? = nil
        var testDescription: String { name }
    }

    static let escaped = #"\x1b[2J\x1b]0;owned by a helper\x07"#

    static let attacks: [Attack] = [
        // Already handled before issue 29: each named, each the attacker's session only.
        Attack(name: "oversize-dimensions", verdict: "name=GEOMETRY", said: ["warning: GEOMETRY: FRAME"]),
        Attack(name: "stride-overflow", verdict: "name=GEOMETRY", said: ["warning: GEOMETRY: FRAME"]),
        Attack(name: "slot-out-of-range", verdict: "name=BAD_SLOT", said: ["warning: BAD_SLOT: FRAME.slot"]),
        Attack(name: "oversize-datagram", verdict: "name=TRUNCATED", said: ["warning: TRUNCATED"]),
        Attack(name: "unexpected-descriptor", verdict: "name=DESCRIPTORS", said: ["warning: DESCRIPTORS"]),
        Attack(name: "too-many-descriptors", verdict: "name=TRUNCATED", said: ["warning: TRUNCATED"]),
        Attack(name: "hello-late", verdict: "name=TIMEOUT", said: ["warning: helper hung: no message for"]),
        Attack(name: "hung", verdict: "name=TIMEOUT", said: ["warning: helper hung: no message for"]),
        Attack(name: "message-flood", verdict: "ended without ERROR", said: ["(SOURCE_LOST, 3): flood over"]),
        Attack(name: "kill-mid-frame", verdict: nil, said: ["warning: helper closed the connection without FINISH"]),
        Attack(name: "sigstop", verdict: nil, said: ["warning: helper hung: no message for",
                                                     "did not exit after losing its session; killing it"]),
        // Issue 29.
        Attack(name: "no-read-nonblocking", verdict: "name=TIMEOUT",
               said: ["warning: helper hung: it read none of the pusher's messages for"], atNginx: true),
        Attack(name: "no-read-blocking", verdict: "name=TIMEOUT",
               said: ["warning: helper hung: it read none of the pusher's messages for"], atNginx: true),
        Attack(name: "connection-flood", verdict: "ended without ERROR",
               said: ["is busy: helper '\(escaped)'", "297 more connections were refused"],
               atMost: ("is busy: helper", 3)),
        Attack(name: "escapes-in-finish", verdict: "ended without ERROR",
               said: ["(SOURCE_LOST, 3): lost: \(escaped)"]),
        Attack(name: "escapes-in-error", verdict: "ended without ERROR",
               said: ["warning: helper reported STATE: the helper says \(escaped)"]),
        Attack(name: "escapes-in-start", verdict: "name=TEXT", said: [#"START.info is not a JSON object: {"source":""# + escaped]),
        Attack(name: "future-frames", verdict: "ended without ERROR",
               said: ["FRAME.pts_ns is 3599", "the arrival time is used instead"], atMost: ("FRAME.pts_ns is", 1)),
        Attack(name: "future-audio", verdict: "ended without ERROR", said: ["AUDIO.pts_ns is 49"], stopAtOnce: true),
        Attack(name: "audio-flood", verdict: "ended without ERROR", said: ["AUDIO.pts_ns is"],
               atMost: ("AUDIO.pts_ns is", 1)),
        Attack(name: "pause-unknown-reason", verdict: "ended without ERROR",
               said: ["the capture helper paused: reason 77", "the capture helper resumed",
                      "the capture helper finished: reason 99: an unknown reason"]),
        Attack(name: "finish-user", verdict: "ended without ERROR",
               said: ["the capture helper finished: stopped by the helper's user (USER, 1): my user stopped me"],
               endsRun: true),
    ]

    let livepush = BuiltProducts.path("livepush")

    @Test(arguments: attacks)
    func aHostileHelperLosesOnlyItself(_ attack: Attack) throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("hostile")).path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let marker = work + "/attack-next", verdict = work + "/attack.out", recording = work + "/out.mkv"
        let events = work + "/events.jsonl", report = work + "/report.html"
        let pattern = try Repository.cPatternHelper()
        // The first helper the supervisor starts is the attacker (with the group livepush gave); its
        // verdict and exit status go to a file, and the wrapper exits 1 so that it is restarted. The
        // next ones are the C reference helper. For "sigstop" every helper is the reference one.
        // Helpers run at normal priority (chrt -o 0): only the pusher is raised.
        let attacker = attack.name == "sigstop" ? "exec chrt -o 0 '\(pattern)' --group \"$group\" --size 320x240"
            : "chrt -o 0 python3 '\(Repository.path("Tests/Fixtures/hostile_helper.py"))' --group \"$group\" "
                + "--case \(attack.name) --timeout 10 >'\(verdict)' 2>&1"
        let script = """
            #!/bin/sh
            group=""; previous=""
            for a in "$@"; do [ "$previous" = "--group" ] && group="$a"; previous="$a"; done
            if [ -e '\(marker)' ]; then
                rm -f '\(marker)'
                printf 'the attacker says \\033[2J\\033]0;owned by a helper\\007\\n' >&2
                \(attacker)
                echo "status $?" >>'\(verdict)'
                exit 1
            fi
            exec chrt -o 0 '\(pattern)' --group "$group" --size 320x240

            """
        try script.write(toFile: work + "/helper", atomically: true, encoding: .utf8)
        chmod(work + "/helper", 0o755)
        FileManager.default.createFile(atPath: marker, contents: nil)
        let key = UniqueName.make("hostile")
        let screen = try ProcessRunner.start(try ProcessRunner.which("chrt"), [
            "-f", "10", livepush, "screen", recording, "--helper", work + "/helper", "--resolution", "320x240", "--fps", "30",
            "--no-mic", "--desktop-audio", "--quiet", "--events", events, "--report", report,
        ] + (attack.atNginx ? [try TestEnvironment.recordURL(key: key)] : []))
        defer { if screen.isRunning { screen.interrupt() } }

        if attack.name == "sigstop" {
            let first = try #require(waitFor(timeoutSeconds: 30) { patternHelper(of: screen) },
                                     "no helper started: \(screen.errorSoFar)")
            try #require(screen.waitForError("screen capture started", timeoutSeconds: 30), "\(screen.errorSoFar)")
            kill(first, SIGSTOP)
            defer { if ProcessTable.isAlive(first) { kill(first, SIGCONT) } }
            #expect(waitUntil(timeoutSeconds: 30) { !ProcessTable.isAlive(first) }, "the stopped helper \(first) runs")
        } else {
            #expect(waitUntil(timeoutSeconds: 60) { fileText(verdict).contains(attack.endsRun ? "ended" : "status ") },
                    "the attacker never finished: \(fileText(verdict))\n\(screen.errorSoFar)")
            #expect(!FileManager.default.fileExists(atPath: marker), "the attacker never ran: \(screen.errorSoFar)")
            let said = fileText(verdict)
            if let expected = attack.verdict {
                // One that ends the run is stopped with it, before it can write its status.
                #expect(said.contains(expected) && (attack.endsRun || said.contains("status 0")),
                        "the attacker heard: \(said)")
            }
        }
        if attack.endsRun {
            #expect(waitUntil(timeoutSeconds: 30) { !screen.isRunning }, "livepush went on after FINISH {USER}")
        } else if !attack.stopAtOnce {
            // Replaced: the supervisor restarted the helper, a reference helper runs, and capture
            // started again after the restart.
            #expect(waitUntil(timeoutSeconds: 30) { patternHelper(of: screen) != nil }, "no replacement helper")
            #expect(waitUntil(timeoutSeconds: 30) {
                let output = screen.errorSoFar
                guard let restart = output.range(of: "restarting it", options: .backwards) else { return false }
                return output[restart.upperBound...].contains("screen capture started")
            }, "the replacement never started capturing: \(screen.errorSoFar)")
            Thread.sleep(forTimeInterval: 2)  // let it run: 2 s of the replacement's pictures
        }
        if screen.isRunning { screen.interrupt() }
        let result = screen.finish()
        #expect(result.exitCode == 0, "\(result)")
        // What a helper prints is relayed ("capture: ..."), escaped too.
        for line in attack.said + ["capture: the attacker says \(Self.escaped)"] {
            #expect(result.standardError.contains(line), "'\(line)' not in:\n\(result.standardError)")
        }
        if let (text, count) = attack.atMost {
            let seen = result.standardError.components(separatedBy: text).count - 1
            #expect(seen >= 1 && seen <= count, "\(seen) lines with '\(text)' (at most \(count)):\n\(result.standardError)")
        }

        // No raw escape anywhere a person reads (SPEC §2.3).
        #expect(!Data(result.standardError.utf8).contains(0x1B) && !Data(result.standardError.utf8).contains(0x07),
                "raw ESC or BEL in stderr")
        for path in [events, report] {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(!bytes.isEmpty && !bytes.contains(0x1B) && !bytes.contains(0x07), "raw ESC or BEL in \(path)")
        }

        // What a viewer gets: pictures that decode, with no gap over 100 ms.
        // At least the 2 s the replacement ran (less when the run ended with the attacker).
        try requireNoVideoGap(recording, atLeast: attack.endsRun ? 5 : 45)
        if attack.atNginx { try requireNoVideoGap(try TestEnvironment.closedRecording(key: key), atLeast: 45) }
        if attack.name == "future-audio" { try requireToneAtItsArrival(recording) }
    }

    /// The recording's (or nginx's FLV's) pictures: decoded without an error, and no two more than
    /// 100 ms apart, up to the last 0.3 s (the stop, after Ctrl-C, is not the stream's).
    private func requireNoVideoGap(_ file: String, atLeast count: Int) throws {
        #expect(try MediaProbe.decodeErrors(file) == "", "ffmpeg -v error on \(file)")
        let all = try ReceivedStream.packets(file, stream: "v:0").map(\.timeS).sorted()
        let times = all.filter { $0 <= (all.last ?? 0) - 0.3 }
        #expect(times.count >= count, "\(times.count) pictures in \(file)")
        let gaps = zip(times, times.dropFirst()).map { ($1 - $0) * 1000 }
        let largest = try #require(gaps.max(), "no pictures in \(file)")
        let at = times[gaps.firstIndex(of: largest) ?? 0]
        #expect(largest < 100.5, "a gap of \(Int(largest)) ms at \(at) s in \(file) (\(times.count) pictures)")
    }

    /// future-audio: 2 s of a 440 Hz tone stamped 5 s ahead. Placed at its arrival, it is in a file
    /// stopped right after; placed at its stamps, it would start 3 s after the file's end.
    private func requireToneAtItsArrival(_ file: String) throws {
        let samples = try AudioAnalysis.decodeMono(file)
        let levels = AudioAnalysis.toneLevelsDbfs(samples, frequencyHz: 440, sampleRateHz: 48000).windows
        let loud = levels.filter { $0 > -30 }.count
        let shown = levels.map { String(Int($0)) }.joined(separator: " ")
        #expect(loud >= 15, "440 Hz above -30 dBFS in \(loud) windows of 100 ms (of \(levels.count)), not 15: \(shown)")
    }

    private func fileText(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// The pid of the screen's pattern-helper (the reference helper the wrapper exec'd), if one runs.
    private func patternHelper(of command: RunningCommand) -> Int32? {
        command.childProcessIdentifiers.first { pid in
            let line = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            return line.split(separator: "\0").first?.contains("/pattern-helper") == true
        }
    }

    private func waitFor<T>(timeoutSeconds: Double, _ value: () -> T?) -> T? {
        var found: T?
        _ = waitUntil(timeoutSeconds: timeoutSeconds) {
            found = value()
            return found != nil
        }
        return found
    }
}
