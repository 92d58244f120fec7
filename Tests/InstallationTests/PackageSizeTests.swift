import Foundation
import Testing
import TestSupport

/// Issue 36, a smaller install: the Debian package installs at most 45 MiB (it was 113: two
/// executables of 57 MB, 34 MB of each ICU's data). The pusher links ICU's data for the root and
/// English locales only (CICUData, tools/icu/subset.py); the helper links neither Foundation nor ICU.
/// On the release executables that `make test` builds first (its `build` prerequisite).
@Suite(.timeLimit(.minutes(10))) struct PackageSizeTests {
    static let installedLimitKiB = 45 * 1024

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

    /// What `make deb` installs, laid out by tools/package/stage (which build-deb uses) from these executables.
    @Test func theInstalledPackageIsAtMost45MiB() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("stage")).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let releaseDirectory = URL(fileURLWithPath: try ReleaseLinkTests.releaseExecutable("livepush")).deletingLastPathComponent().path
        let stage = try ProcessRunner.run(Repository.path("tools/package/stage"), [root, releaseDirectory], timeoutSeconds: 120)
        try #require(stage.exitCode == 0, "\(stage)")
        let line = try #require(stage.standardOutput.split(separator: "\n").first { $0.hasPrefix("package installed_kib=") },
                                "\(stage)")
        let fields = Dictionary(uniqueKeysWithValues: line.split(separator: " ").dropFirst().map {
            let pair = $0.split(separator: "=", maxSplits: 1)
            return (String(pair[0]), Int(pair[1]) ?? -1)
        })
        let installedKiB = try #require(fields["installed_kib"])
        let executablesKiB = try #require(fields["executables_kib"])
        #expect(installedKiB > 0 && installedKiB <= Self.installedLimitKiB, "\(line)")
        #expect(executablesKiB > 0 && executablesKiB < installedKiB, "\(line)")
        for file in ["bin/livepush", "bin/livepush-capture", "share/man/man1/livepush.1.gz", "share/doc/livepush/copyright"] {
            #expect(FileManager.default.fileExists(atPath: "\(root)/usr/\(file)"), "tools/package/stage left out /usr/\(file)")
        }
    }
}
