import Foundation
import Testing
import TestSupport

/// The fault script of `make soak`, shortened for CI (10 helper kills, a hang, 2 helpers that
/// break the protocol mid-stream, 3 nginx restarts), in a test environment of its own (it
/// restarts nginx, which the other tests share).
@Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp) && TestEnvironment.isEnabled(.pipewire),
                "needs the test environment's tools (make test)"), .timeLimit(.minutes(10)))
struct SoakTests {
    @Test func aShortSoakSurvivesEveryFaultWithoutLeaks() throws {
        let result = try ProcessRunner.run(Repository.path("tools/testenv"), [
            "run", "--", BuiltProducts.path("livepush-bench"), "soak",
            "--hostile", Repository.path("Tests/Fixtures/hostile_helper.py"), "--painter", try Repository.x11Painter(),
            "--kills", "10", "--hangs", "1", "--garbage", "2", "--nginx-restarts", "3",
        ], timeoutSeconds: 300)
        #expect(result.exitCode == 0, "\(result)")
        var fields: [String: [String: String]] = [:]
        for line in result.standardOutput.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count > 2 else { continue }
            let name = words[0] == "fault" ? String(words[1])
                : words[0] == "live-back" ? "live-back " + words[1] : String(words[0])
            var values: [String: String] = [:]
            for word in words where word.contains("=") {
                let pair = word.split(separator: "=", maxSplits: 1)
                values[String(pair[0])] = String(pair[1])
            }
            fields[name] = values
        }
        for (kind, count) in [("helper-kill", "10"), ("helper-hang", "1"), ("helper-garbage", "2"), ("nginx-restart", "3")] {
            let line = fields[kind] ?? [:]
            #expect(line["n"] == count && line["survived"] == count, "\(kind): \(line)")
            #expect(Double(line["rss_growth_pct"] ?? "") ?? 100 <= 10, "\(kind): \(line)")
            #expect(Int(line["fd_growth"] ?? "") ?? 100 <= 0, "\(kind): \(line)")
            #expect(Int(line["max_gap_ms"] ?? "") ?? 10000 <= (kind.hasPrefix("helper") ? 1000 : 5000), "\(kind): \(line)")
        }
        // The painter's square live again at nginx after each helper fault: within 5 s of a kill,
        // 12 s of a hang (its detection included) and 12 s of a garbage helper (two restarts).
        for (kind, count, limitMs) in [("helper-kill", "10", 5000), ("helper-hang", "1", 12000),
                                       ("helper-garbage", "2", 12000)] {
            let line = fields["live-back " + kind] ?? [:]
            #expect(line["n"] == count && line["back"] == count, "live-back \(kind): \(line)")
            #expect(Int(line["max_ms"] ?? "") ?? .max <= limitMs, "live-back \(kind): \(line)")
        }
        let shutdown = fields["shutdown"] ?? [:]
        // exit_ms is the benchmark's figure; the test only needs the exit to come (a generous bound).
        #expect(Int(shutdown["exit_ms"] ?? "") ?? .max < 20000 && shutdown["exit_code"] == "0", "\(shutdown)")
        #expect(shutdown["orphan_helpers"] == "0" && shutdown["stale_socket"] == "0", "\(shutdown)")
        let recording = fields["recording"] ?? [:]
        #expect(recording["decoded"] == "yes" && (Int(recording["frames"] ?? "") ?? 0) > 1000, "\(recording)")
    }
}
