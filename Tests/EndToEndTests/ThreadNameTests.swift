import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// Every thread the pusher starts carries the name docs/architecture.md's Threads page gives it,
    /// as Linux shows it (`top -H`, gdb, /proc/PID/task/TID/comm): Foundation's `Thread.name` set
    /// before `start()` named none of them on Linux, and a name over 15 bytes is refused by the kernel.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct ThreadNameTests {
        @Test func aPushWithTheMicAndTheControlSocketShowsItsThreadsByName() throws {
            let key = UniqueName.make("threads")
            let broadcast = try LiveBroadcast(livepush: BuiltProducts.path("livepush"), [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--fps", "30", "--mic", try TestEnvironment.microphone(),
                "--quiet", "--duration", "30",
            ])
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            let pid = broadcast.command.processIdentifier
            let expected: Set<String> = ["livepush-link", "livepush-video", "livepush-mixer", "livepush-rtmp", "livepush-mic",
                                         "livepush-ctl", "livepush-helper"]
            var names = Set<String>()
            let all = try waitUntil(timeoutSeconds: 10) {
                names = Self.threadNames(of: pid)
                return expected.isSubset(of: names)
            }
            let result = broadcast.stop()
            #expect(all, "missing \(expected.subtracting(names)); the threads were \(names.sorted())")
            #expect(result.exitCode == 0, "\(result)")
        }

        /// The names of the threads of `pid` now, from /proc.
        static func threadNames(of pid: Int32) -> Set<String> {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            return Set(tasks.compactMap { task in
                (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .newlines)
            })
        }
    }
}
