import Foundation
import Testing
import TestSupport

/// docs/architecture.md's module table is the map a newcomer reads first: one row per target of
/// Package.swift, in its order, each with the dependencies Package.swift gives it
/// (tools/module-table checks it; `--write` rewrites it after a change to Package.swift).
@Suite(.timeLimit(.minutes(10))) struct ArchitectureMapTests {
    @Test func theModuleTableIsPackageSwifts() throws {
        let check = try ProcessRunner.run(Repository.path("tools/module-table"), ["--check"], timeoutSeconds: 400)
        #expect(check.exitCode == 0, "\(check)")
        #expect(check.standardError.isEmpty, "\(check)")
    }
}

/// Every thread name written in the sources fits the kernel's 15 bytes (a longer one names nothing
/// in a release build and stops a debug one): `ThreadName.setCurrent("...")` and the PipeWire loops'.
@Suite struct ThreadNameLimitTests {
    @Test func everyThreadNameInTheSourcesFitsLinuxsLimit() throws {
        let pattern = try Regex(#"(ThreadName\.setCurrent\(|PipeWireConnection\(name: |PipeWireGraph\(name: )"([^"]*)""#)
        let sources = Repository.path("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources)?.compactMap { $0 as? String })
        var names: [String: String] = [:]
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources + "/" + file, encoding: .utf8)
            for match in text.matches(of: pattern) {
                if let name = match.output[2].substring { names[String(name)] = file }
            }
        }
        #expect(names.count >= 15, "thread names found: \(names.keys.sorted())")
        for (name, file) in names {
            #expect(name.utf8.count <= 15, "'\(name)' in \(file) is \(name.utf8.count) bytes")
        }
    }
}

/// Every time limit in the tests is at least 10 minutes (docs/testing.md): Swift Testing counts a
/// limit from when the test is started, and in a full run on 2 cores a test can wait minutes for one of
/// the pool's two threads; three 5-minute limits failed CI runs that way with no hang behind them.
@Suite struct TimeLimitTests {
    @Test func everyTimeLimitIsTenMinutesOrMore() throws {
        let pattern = try Regex(#"\.timeLimit\(\.(minutes|seconds)\((\d+)\)\)"#)
        let tests = Repository.path("Tests")
        let files = try #require(FileManager.default.enumerator(atPath: tests)?.compactMap { $0 as? String })
        var limits: [(file: String, minutes: Double)] = []
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: tests + "/" + file, encoding: .utf8)
            for match in text.matches(of: pattern) {
                let digits = try #require(match.output[2].substring)
                let value = try #require(Double(String(digits)))
                limits.append((file, match.output[1].substring == "minutes" ? value : value / 60))
            }
        }
        #expect(limits.count >= 100, "time limits found: \(limits.count)")
        for limit in limits {
            #expect(limit.minutes >= 10, "\(limit.file) has a time limit of \(limit.minutes) minutes")
        }
    }
}
