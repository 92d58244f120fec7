import Control
import Foundation
import LivePush
import Testing

/// `record split`, `record start FILE --split ...` and the values `--record-split` takes (issue 34).
struct RecordSplitCommandTests {
    @Test func splitValuesAreDurationsOrSizesWithTheirUnits() throws {
        #expect(try RecordingSplit(parsing: "10s") == .durationMs(10_000))
        #expect(try RecordingSplit(parsing: "30m") == .durationMs(1_800_000))
        #expect(try RecordingSplit(parsing: "5min") == .durationMs(300_000))
        #expect(try RecordingSplit(parsing: "2h") == .durationMs(7_200_000))
        #expect(try RecordingSplit(parsing: "1.5s") == .durationMs(1500))
        #expect(try RecordingSplit(parsing: "500MB") == .sizeBytes(500_000_000))
        #expect(try RecordingSplit(parsing: "2gb") == .sizeBytes(2_000_000_000))
        #expect(try RecordingSplit(parsing: "1500kB") == .sizeBytes(1_500_000))
        for (text, reason) in [("0", "with its unit"), ("10", "with its unit"), ("500ms", "with its unit"),
                               ("0s", "above 0"), ("0.5s", "at least 1s"), ("900kB", "at least 1MB"), ("-3m", "above 0"),
                               ("tenm", "above 0"), ("", "with its unit")] {
            #expect(throws: RecordingSplitError.self, "\(text)") { try RecordingSplit(parsing: text) }
            do {
                _ = try RecordingSplit(parsing: text)
            } catch {
                #expect(error.reason.contains(reason), "\(text): \(error.reason)")
            }
        }
        #expect(RecordingSplit.durationMs(1_800_000).description == "30m" && RecordingSplit.sizeBytes(2_000_000_000).description == "2GB")
    }

    @Test func numberedNamesKeepTheExtensionAndSortInOrder() {
        #expect(RecordingSplit.numberedPath("talk.mkv", number: 1) == "talk-001.mkv")
        #expect(RecordingSplit.numberedPath("/v/my.show.mp4", number: 12) == "/v/my.show-012.mp4")
        #expect(RecordingSplit.numberedPath("a.flv", number: 1000) == "a-1000.flv")
    }

    @Test func recordSplitAndStartWithSplitParse() throws {
        #expect(try ControlCommand.parse(["record", "split"]) == .record(.split))
        #expect(try ControlCommand.parse(["record", "start", "/v/a.mkv", "--split", "30m"])
            == .record(.start(path: "/v/a.mkv", split: .durationMs(1_800_000))))
        #expect(try ControlCommand.parse(["record", "start", "/v/a.mkv"]) == .record(.start(path: "/v/a.mkv", split: nil)))
        for words in [["record", "split", "now"], ["record", "start", "/v/a.mkv", "--split"],
                      ["record", "start", "/v/a.mkv", "--split", "10"], ["record", "start", "/v/a.mkv", "--every", "10s"]] {
            #expect(throws: ControlError.self, "\(words)") { try ControlCommand.parse(words) }
        }
        let command = ControlCommand.record(.start(path: "/v/a.mkv", split: .sizeBytes(2_000_000_000)))
        #expect(try ControlCommand.parse([command.verb] + command.arguments) == command)
    }
}
