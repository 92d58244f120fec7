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
