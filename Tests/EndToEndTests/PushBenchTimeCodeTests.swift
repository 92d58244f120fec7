import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// The push benchmark's clock: x11-paint's `timecode` pattern on the test Xvfb, grabbed by
    /// ffmpeg's x11grab and decoded by `livepush-bench push --self-test`, reads back as a moment
    /// just past; a screen without a code is refused rather than misread.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11), "needs the test Xvfb (make test)"), .timeLimit(.minutes(10)))
    struct PushBenchTimeCodeTests {
        private func selfTest(_ extra: [String] = []) throws -> CommandResult {
            try ProcessRunner.run(BuiltProducts.path("livepush-bench"), [
                "push", "--self-test", "--painter", try Repository.x11Painter(),
                "--display", try TestEnvironment.display(),
            ] + extra, timeoutSeconds: 60)
        }

        private func fields(_ line: String) -> [String: Double] {
            Dictionary(line.split(separator: " ").compactMap { word -> (String, Double)? in
                let parts = word.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, let value = Double(parts[1]) else { return nil }
                return (String(parts[0]), value)
            }, uniquingKeysWith: { $1 })
        }

        @Test func timeCodeOnTheScreenDecodesToAMomentJustPast() throws {
            let result = try selfTest()
            #expect(result.exitCode == 0, "\(result)")
            let line = result.standardOutput.split(separator: "\n")
                .first { $0.hasPrefix("self-test timecode synthetic=ok ") }
            let values = fields(String(try #require(line, "\(result)")))
            let frames = try #require(values["frames"]), valid = try #require(values["valid"])
            #expect(frames >= 20, "2 s of x11grab at 30 fps")
            #expect(valid * 10 >= frames * 9, "\(valid) of \(frames) frames held a valid code")
            #expect(try #require(values["latency_ms_min"]) >= 0, "a code from the future: the decoder misreads")
            // How few ms is the benchmark's figure; a code read back must only be a moment just past.
            let p50 = try #require(values["latency_ms_p50"]), maximum = try #require(values["latency_ms_max"])
            #expect(p50 <= maximum && maximum <= 5000, "latency p50 \(p50) ms, max \(maximum) ms")
        }

        @Test func screenWithoutATimeCodeIsRefused() throws {
            let result = try selfTest(["--pattern", "solid 808080"])
            #expect(result.exitCode == 1, "\(result)")
            #expect(result.standardOutput.contains("self-test FAILED: none of "), "\(result)")
            #expect(result.standardOutput.contains(" grabbed frames held a valid time code"), "\(result)")
        }
    }
}
