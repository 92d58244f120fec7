import Foundation
import Testing
import TestSupport

/// The encoding options of `livepush screen` and `record`, and --config FILE, as a user types them.
@Suite struct ConfigOptionsTests {
    let livepush = BuiltProducts.path("livepush")

    private func configFile(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("config")).path + ".json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func notANumberNamesTheOption() throws {
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--fps", "abc"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.hasPrefix("livepush screen: invalid value 'abc' for '--fps'"))
    }

    @Test func outOfRangeValueSaysTheRange() throws {
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--gop", "11"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("--gop 11 s is outside 1...10 s"))
    }

    @Test func unknownKeyInTheConfigFileIsNamed() throws {
        let path = try configFile(#"{"fps": 30, "framerate": 60}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--config", path])
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("unknown key 'framerate'"))
    }

    @Test func missingConfigFileIsNamed() throws {
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--config", "/tmp/no-such-livepush.json"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("/tmp/no-such-livepush.json"))
    }

    @Test func customQualityWithoutItsBitratesSaysWhichAreMissing() throws {
        let result = try ProcessRunner.run(livepush, ["screen", "/tmp/never.mp4", "--quality", "custom",
                                                      "--bitrate", "3000"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("custom quality needs --bitrate, --min-bitrate and --initial-bitrate"))
    }

    @Test func recordWithoutAGroupSaysSo() throws {
        let result = try ProcessRunner.run(livepush, ["record", "/tmp/never.mp4"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.hasPrefix("livepush record: missing argument <--group NAME>"))
    }
}
