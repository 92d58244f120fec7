import Foundation
import Testing
import TestSupport

/// The release executables that `make build` (and so `make run`, `make bench` and `make test`) links
/// are linked as Package.swift's `releaseLinking` says: the Swift runtime and Foundation inside
/// them, relative relocations packed (DT_RELR), and the functions of tools/link/NAME.order placed
/// together at the start of .text. The memory that saves is measured by the push benchmark
/// (`pusher_rss_mib`, docs/benchmarks.md "Where the memory goes"), not here.
@Suite(.timeLimit(.minutes(10))) struct ReleaseLinkTests {
    static let products = ["livepush", "livepush-capture"]

    /// `.build/release/NAME`, which `make test` builds first (its `build` prerequisite).
    static func releaseExecutable(_ name: String) throws -> String {
        let path = Repository.path(".build/release/\(name)")
        try #require(FileManager.default.isExecutableFile(atPath: path),
                     "\(path) is missing: `make test` builds it (make build); run that first")
        return path
    }

    @Test(arguments: products) func carriesTheSwiftRuntimeAndPackedRelocations(_ product: String) throws {
        let dynamic = try ProcessRunner.run("readelf", ["--dynamic", try Self.releaseExecutable(product)])
        try #require(dynamic.exitCode == 0, "\(dynamic)")
        let needed = dynamic.standardOutput.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(!needed.isEmpty, "readelf printed no NEEDED entries: \(dynamic)")
        #expect(!needed.contains { $0.contains("libswift") || $0.contains("libFoundation") || $0.contains("libdispatch") },
                "\(product) loads the Swift runtime as shared libraries: \(needed.joined(separator: "\n"))")
        #expect(dynamic.standardOutput.contains("(RELR)"), "\(product) has no packed relocations (DT_RELR)")
    }

    /// With the order file applied, the functions it names sit in the first 2 MiB of a .text of
    /// about 16 MB (the pusher) or 9.5 (the helper, which links no Foundation since issue 36); without
    /// it they spread over all of it.
    @Test(arguments: products) func placesTheFunctionsOfItsOrderFileTogether(_ product: String) throws {
        let ordered = Set(try String(contentsOfFile: Repository.path("tools/link/\(product).order"), encoding: .utf8)
            .split(separator: "\n").map(String.init))
        try #require(ordered.count > 100, "tools/link/\(product).order names \(ordered.count) functions")
        let executable = try Self.releaseExecutable(product)
        let sections = try ProcessRunner.run("readelf", ["--wide", "--section-headers", executable])
        let textLine = try #require(sections.standardOutput.split(separator: "\n").first { $0.contains(" .text ") },
                                    "no .text in \(sections)")
        let fields = textLine.split(separator: "]").last!.split(separator: " ")
        let textStart = try #require(UInt64(fields[2], radix: 16))
        let textBytes = try #require(UInt64(fields[4], radix: 16))
        let symbols = try ProcessRunner.run("nm", ["--defined-only", executable], timeoutSeconds: 60)
        try #require(symbols.exitCode == 0, "\(symbols.standardError)")
        var found = Set<String>()
        var offsets: [UInt64] = []
        for line in symbols.standardOutput.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 2)
            guard parts.count == 3, parts[1] == "t" || parts[1] == "T", ordered.contains(String(parts[2])),
                  let address = UInt64(parts[0], radix: 16), address >= textStart else { continue }
            found.insert(String(parts[2]))
            offsets.append(address - textStart)
        }
        // A stale order file (the code moved on) names functions that no longer exist.
        #expect(Double(found.count) >= 0.8 * Double(ordered.count),
                "only \(found.count) of the \(ordered.count) functions of tools/link/\(product).order are in \(product): run tools/orderfile")
        let front = 2 << 20
        let inFront = offsets.filter { $0 < UInt64(front) }.count
        #expect(textBytes > UInt64(3 * front), ".text is \(textBytes) bytes")
        #expect(Double(inFront) >= 0.95 * Double(offsets.count),
                "\(inFront) of \(offsets.count) ordered functions lie in the first 2 MiB of \(product)'s .text (\(textBytes) bytes)")
    }
}
