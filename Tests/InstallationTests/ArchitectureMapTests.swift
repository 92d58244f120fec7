import Foundation
import Testing
import TestSupport

/// docs/architecture.md's module table is the map a newcomer reads first: one row per target of
/// Package.swift, in its order, each with the dependencies Package.swift gives it
/// (tools/module-table checks it; `--write` rewrites it after a change to Package.swift).
@Suite(.timeLimit(.minutes(5))) struct ArchitectureMapTests {
    @Test func theModuleTableIsPackageSwifts() throws {
        let check = try ProcessRunner.run(Repository.path("tools/module-table"), ["--check"], timeoutSeconds: 120)
        #expect(check.exitCode == 0, "\(check)")
        #expect(check.standardError.isEmpty, "\(check)")
    }
}
