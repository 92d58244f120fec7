import Foundation
import Testing
import TestSupport

/// Issue 36, a smaller install: the Debian package installs at most 45 MiB (it was 113: two
/// executables of 57 MB, 34 MB of each ICU's data). The pusher links ICU's data for the root and
/// English locales only (CICUData, tools/icu/subset.py); the helper links neither Foundation nor ICU.
/// On the release executables that `make test` builds first (its `build` prerequisite); the installed
/// size is InstallTests' `thePackageInstallsAtMost45MiB`.
@Suite(.timeLimit(.minutes(10))) struct PackageSizeTests {
    private func definedSymbols(_ product: String) throws -> [Substring] {
        let symbols = try ProcessRunner.run("nm", ["--defined-only", "--print-size", try ReleaseLinkTests.releaseExecutable(product)],
                                            timeoutSeconds: 120)
        try #require(symbols.exitCode == 0, "\(symbols.standardError)")
        let lines = symbols.standardOutput.split(separator: "\n")
        try #require(lines.count > 10_000, "nm listed \(lines.count) symbols of \(product)")
        return lines
    }

    @Test func thePusherLinksTheICUSubsetNotTheToolchainsData() throws {
        let subsetPath = Repository.path("Sources/CICUData/icudt76l-root-en.dat")
        let subsetBytes = try #require(try FileManager.default.attributesOfItem(atPath: subsetPath)[.size] as? Int)
        let data = try definedSymbols("livepush").filter { $0.hasSuffix(" icudt76_dat") }
        try #require(data.count == 1, "livepush defines icudt76_dat \(data.count) times: \(data)")
        let fields = data[0].split(separator: " ")
        try #require(fields.count == 4, "\(data[0])")
        let bytes = try #require(Int(fields[1], radix: 16), "\(data[0])")
        #expect(bytes == subsetBytes, "livepush's ICU data is \(bytes) bytes, \(subsetPath) \(subsetBytes)")
        #expect(bytes < 8 << 20, "ICU's data in livepush is \(bytes) bytes")
    }

    @Test func theHelperLinksNeitherFoundationNorICU() throws {
        let symbols = try definedSymbols("livepush-capture")
        let essentials = symbols.filter { $0.contains(" $s20FoundationEssentials") }
        #expect(!essentials.isEmpty, "livepush-capture has no FoundationEssentials symbols: is nm reading the right file?")
        let unwanted = symbols.filter {
            $0.contains(" $s10Foundation") || $0.contains(" $s30FoundationInternationalization") || $0.contains("icudt")
                || $0.hasSuffix(" CFStringCreateWithCString")
        }
        #expect(unwanted.isEmpty, "livepush-capture links Foundation or ICU: \(unwanted.prefix(10).joined(separator: "\n"))")
    }
}
