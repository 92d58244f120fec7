import Foundation
import Glibc
import Testing
import TestSupport

extension SharedScreen {
    /// The two helper faults other than a kill, each in a test of its own and measured in what
    /// nginx received: a helper that hangs (stops sending, stays connected) and one that breaks
    /// the protocol. After each, the pusher notices, the placeholder goes out, a new real X11
    /// helper is started, and x11-paint's square is live again at nginx (undimmed, moving).
    /// How fast the hang is noticed is a benchmark figure (`make soak`'s `detect helper-hang`).
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct HelperFaultTests {
        let livepush = BuiltProducts.path("livepush")

        private func start(_ extra: [String]) throws -> RunningCommand {
            try ProcessRunner.start(livepush, ["screen", "--display", try TestEnvironment.display(), "--region",
                                               "0,0,320,240", "--resolution", "320x240", "--quiet"] + extra)
        }

        private func painter() throws -> RunningCommand {
            try X11Painter.start(["--geometry", "320x240+0+0", "square", "1e2a3a", "ffcc00", "120", "8"]).painter
        }

        /// The pid of the screen's livepush-capture (the real helper, not a wrapper script).
        private func capturePid(of command: RunningCommand) -> Int32? {
            command.childProcessIdentifiers.first { pid in
                let line = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
                return line.split(separator: "\0").first?.hasSuffix("livepush-capture") == true
            }
        }

        private func isAlive(_ pid: Int32) -> Bool { ProcessTable.isAlive(pid) }

        /// The stream time of the last picture nginx has written to `file` (-1 before the first).
        private func receivedMs(_ file: String) -> Int { ((try? FLVTagReader.lastVideoMs(file)) ?? nil) ?? -1 }

        /// Ends the screen with Ctrl-C and checks what nginx recorded: the placeholder after the
        /// fault at `faultMs` (stream time), then the live square within `boundMs`; pictures with
        /// no gap over 1 s; and a decode with nothing on ffmpeg's `-v error`.
        private func requireLiveBack(_ screen: RunningCommand, key: String, faultMs: Int, boundMs: Int) throws {
            screen.interrupt()
            let result = screen.finish()
            #expect(result.exitCode == 0, "\(result)")
            let file = try TestEnvironment.closedRecording(key: key)
            let pictures = try ReceivedPictures.decode(file)
            let recovery = PainterSquare(minShare: 0.1).recovery(after: faultMs, in: pictures)
            print("\(key): \(recovery)")
            #expect(recovery.placeholderMs != nil, "\(recovery)")
            let liveBackMs = try #require(recovery.liveBackMs, "never live again: \(recovery)\n\(result.standardError)")
            #expect(liveBackMs <= boundMs, "\(recovery)")
            #expect(pictures.count >= 100, "\(pictures.count) pictures")
            let gaps = zip(pictures.timesMs, pictures.timesMs.dropFirst()).map { $1 - $0 }
            #expect(try #require(gaps.max()) <= 1000, "largest gap between pictures \(gaps.max() ?? -1) ms")
            #expect(try MediaProbe.decodeErrors(file) == "", "ffmpeg -v error on \(file)")
        }

        /// SIGSTOP to the real livepush-capture: it stays connected and sends nothing. The pusher
        /// notices (heartbeats stop), sends the placeholder, kills the stopped helper 2 s after its
        /// session ended, and starts a new one. Bound: the live square within 8 s of stream time of
        /// the stop (about 3 s to notice, the 2 s grace before the kill, the restart, 8 pictures).
        @Test func aHungHelperIsKilledAndReplacedAndTheLiveScreenIsBackAtTheReceiver() throws {
            let painter = try painter()
            defer {
                painter.closeInput()
                _ = painter.finish()
            }
            let key = UniqueName.make("hung")
            let screen = try start([try TestEnvironment.recordURL(key: key)])
            let file = try TestEnvironment.recordedFile(key: key).path
            try #require(waitUntil(timeoutSeconds: 60) { receivedMs(file) >= 2000 },
                         "nginx has pictures up to \(receivedMs(file)) ms, not 2000: \(screen.errorSoFar)")
            let hung = try #require(capturePid(of: screen), "no livepush-capture: \(screen.errorSoFar)")
            let faultMs = receivedMs(file)
            kill(hung, SIGSTOP)
            defer { if isAlive(hung) { kill(hung, SIGCONT) } }  // one the pusher failed to kill would stay stopped
            #expect(screen.waitForError("screen capture interrupted", timeoutSeconds: 30), "\(screen.errorSoFar)")
            #expect(screen.waitForError("(pid \(hung)) did not exit after losing its session; killing it",
                                        timeoutSeconds: 30), "\(screen.errorSoFar)")
            #expect(waitUntil(timeoutSeconds: 30) { !isAlive(hung) }, "the hung helper \(hung) still runs")
            #expect(waitUntil(timeoutSeconds: 30) { capturePid(of: screen).map { $0 != hung } ?? false },
                    "no new livepush-capture after the hang: \(screen.errorSoFar)")
            #expect(screen.waitForError("screen capture started", count: 2, timeoutSeconds: 30), "\(screen.errorSoFar)")
            #expect(waitUntil(timeoutSeconds: 60) { receivedMs(file) >= faultMs + 12000 }, "\(receivedMs(file)) ms")
            try requireLiveBack(screen, key: key, faultMs: faultMs, boundMs: 8000)
        }

        /// The helper after a kill breaks the protocol (Tests/Fixtures/hostile_helper.py, case
        /// `sequence-backwards`: two FRAMEs, the second with an older sequence number): the pusher
        /// answers ERROR SEQUENCE, ends the session, and the next helper is the real one again.
        /// The garbage helper runs after a kill, as in `make soak` (a running livepush-capture
        /// cannot be made to send garbage), so the bound counts from the kill: the live square
        /// within 8 s of stream time (the kill's restart, the bad session, its restart, 8 pictures).
        /// The live run found is the real helper's after the bad session: the marker makes the first
        /// helper after the kill the hostile one, and its two FRAMEs cannot make 8 moving pictures.
        @Test func aHelperThatSendsGarbageIsReplacedAndTheLiveScreenIsBackAtTheReceiver() throws {
            let painter = try painter()
            defer {
                painter.closeInput()
                _ = painter.finish()
            }
            let work = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("garbage")).path
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: work) }
            let marker = work + "/garbage-next", verdict = work + "/hostile.out"
            // Once after the marker appears, the hostile helper runs instead of livepush-capture
            // (with the group livepush gave) and its verdict line and exit status go to a file.
            let script = """
                #!/bin/sh
                if [ -e '\(marker)' ]; then
                    rm -f '\(marker)'
                    group=""; previous=""
                    for a in "$@"; do [ "$previous" = "--group" ] && group="$a"; previous="$a"; done
                    python3 '\(Repository.path("Tests/Fixtures/hostile_helper.py"))' --group "$group" \\
                        --case sequence-backwards --timeout 5 >'\(verdict)' 2>&1
                    echo "status $?" >>'\(verdict)'
                    exit 1
                fi
                exec '\(BuiltProducts.path("livepush-capture"))' "$@"

                """
            try script.write(toFile: work + "/helper", atomically: true, encoding: .utf8)
            chmod(work + "/helper", 0o755)
            let key = UniqueName.make("garbage")
            let screen = try start([try TestEnvironment.recordURL(key: key), "--helper", work + "/helper"])
            let file = try TestEnvironment.recordedFile(key: key).path
            try #require(waitUntil(timeoutSeconds: 60) { receivedMs(file) >= 2000 },
                         "nginx has pictures up to \(receivedMs(file)) ms, not 2000: \(screen.errorSoFar)")
            let first = try #require(capturePid(of: screen), "no livepush-capture: \(screen.errorSoFar)")
            FileManager.default.createFile(atPath: marker, contents: nil)
            let faultMs = receivedMs(file)
            kill(first, SIGKILL)
            // The hostile session: started, then ended by the pusher's ERROR.
            #expect(screen.waitForError("screen capture interrupted", timeoutSeconds: 30), "\(screen.errorSoFar)")
            #expect(waitUntil(timeoutSeconds: 30) {
                ((try? String(contentsOfFile: verdict, encoding: .utf8)) ?? "").contains("status ")
            }, "the hostile helper never finished: \(screen.errorSoFar)")
            let said = try String(contentsOfFile: verdict, encoding: .utf8)
            #expect(said.contains("received ERROR") && said.contains("name=SEQUENCE") && said.contains("status 0"),
                    "the pusher did not answer the garbage with ERROR SEQUENCE: \(said)")
            #expect(!FileManager.default.fileExists(atPath: marker), "the hostile helper never ran")
            // The guide: "a warning names the rule".
            #expect(screen.waitForError("warning: SEQUENCE", timeoutSeconds: 30), "\(screen.errorSoFar)")
            #expect(screen.waitForError("exited with status 1", timeoutSeconds: 30), "\(screen.errorSoFar)")
            #expect(waitUntil(timeoutSeconds: 30) { capturePid(of: screen).map { $0 != first } ?? false },
                    "no new livepush-capture after the garbage: \(screen.errorSoFar)")
            #expect(waitUntil(timeoutSeconds: 60) { receivedMs(file) >= faultMs + 12000 }, "\(receivedMs(file)) ms")
            try requireLiveBack(screen, key: key, faultMs: faultMs, boundMs: 8000)
        }
    }
}
