@testable import Control
import Foundation
@testable import LivePush
import Testing

/// The statistics and volume lines written into the kept buffer are byte for byte what the
/// dictionary path (`JSONLine.encode`, Foundation's ISO 8601 formatter) writes for the same values.
@Suite(.timeLimit(.minutes(10))) struct EventLineTests {
    private static let stamp = EventStamp(sequence: 4711, monotonicNs: 123_456_789_012_345, wallSeconds: 1_796_130_982,
                                          wallMilliseconds: 7)

    private static func dictionaryLine(_ type: String, _ fields: [String: Any], _ stamp: EventStamp) -> String {
        var object = fields
        object["type"] = type
        object["seq"] = stamp.sequence
        object["monotonicNs"] = stamp.monotonicNs
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        let date = Date(timeIntervalSince1970: Double(stamp.wallSeconds) + Double(stamp.wallMilliseconds) / 1000 + 0.0002)
        object["time"] = formatter.string(from: date)
        return JSONLine.encode(object)
    }

    @Test func statisticsLineMatchesTheDictionaryPath() {
        var figures = LivePusherStatistics()
        figures.appCpu = 37
        figures.systemCpu = 81
        figures.width = 1920
        figures.height = 1080
        figures.fps = 30
        figures.videoBitrateKbps = 4512
        figures.audioBitrateKbps = 128
        figures.framesDropped = -3
        figures.recordingBytes = 9_876_543_210
        figures.bytesSent = 1_234_567
        figures.micLevel = 42
        figures.videoProcessMs = 1.25
        let destinations = [
            LivePushDestinationStatus(index: 0, url: "rtmp://127.0.0.1:1935/live/****", status: .connectSuccess,
                                      sendBitrateKbps: 4600, queueMs: 12, delayMs: 3, framesDropped: 0, bytesSent: 99),
            LivePushDestinationStatus(index: 1, url: "rtmp://h/app/\"x\u{1}\\\u{e9}", status: .reconnecting,
                                      sendBitrateKbps: 0, queueMs: 0, delayMs: 0, framesDropped: 7, bytesSent: 0),
        ]
        var writer = EventLineWriter()
        for paused in [false, true] {
            writer.statistics(figures, destinations: destinations, redactedURLs: destinations.map { $0.url },
                              paused: paused, stamp: Self.stamp)
            var fields = ControlJSON.object(figures)
            fields["destinations"] = destinations.map(ControlJSON.object)
            fields["paused"] = paused
            #expect(String(decoding: writer.bytes, as: UTF8.self) == Self.dictionaryLine("statistics", fields, Self.stamp))
        }
        writer.statistics(LivePusherStatistics(), destinations: [], redactedURLs: [], paused: false, stamp: Self.stamp)
        var fields = ControlJSON.object(LivePusherStatistics())
        fields["destinations"] = [Any]()
        fields["paused"] = false
        #expect(String(decoding: writer.bytes, as: UTF8.self) == Self.dictionaryLine("statistics", fields, Self.stamp))
    }

    @Test func volumeLineMatchesTheDictionaryPath() {
        var writer = EventLineWriter()
        for volume in [0, 57, 100] {
            writer.volume(volume, stamp: Self.stamp)
            #expect(String(decoding: writer.bytes, as: UTF8.self)
                == Self.dictionaryLine("volume", ["volume": volume], Self.stamp))
        }
    }

    @Test(arguments: [Int64(0), 951_782_400, 1_796_130_982, 4_102_444_799])
    func timestampMatchesFoundation(seconds: Int64) {
        for milliseconds: Int32 in [0, 7, 999] {
            let stamp = EventStamp(sequence: 1, monotonicNs: 1, wallSeconds: seconds, wallMilliseconds: milliseconds)
            let expected = Self.dictionaryLine("x", [:], stamp)
            let time = EventLineWriter.timestamp(stamp)
            #expect(time.count == 24)
            #expect(expected.contains("\"time\":\"\(time)\""))
        }
    }

    /// The hand-written URL scanner finds what the pattern it replaced found (NSRegularExpression
    /// here is the oracle): every URL redacted, the text around it untouched.
    @Test func redactionMatchesTheRegularExpression() throws {
        let pattern = try NSRegularExpression(pattern: "[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>]+")
        func oracle(_ text: String) -> String {
            guard text.contains("://") else { return text }
            var result = "", last = text.startIndex
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let range = Range(match.range, in: text)!
                result += text[last..<range.lowerBound]
                result += Redaction.redactURL(String(text[range]))
                last = range.upperBound
            }
            return result + text[last...]
        }
        let texts = [
            "publishing to rtmp://127.0.0.1:1935/live/secretkey", "rtmp://h/app/key?token=1 and srt://h:9000?passphrase=x",
            "1abc://host/app/key", "://nothing", "x:// y", "a://b://c/d/e", "\"rtmps://h/a/k\" 'rtmp://h/a/k'<rtmp://h/a/k>",
            "no url here", "tab\trtmp://h/a/k\nnext", "caf\u{e9} rtmp://h\u{e9}/a/k\u{2003}rest", "+.-://h/a/k", "..x-y://h/a/k",
            "rtmp://", "rtmp:///", "http://a http://b/c/d", "ab:/x://y/z/w", "rtmp://h/a/k\u{85}after",
        ]
        for text in texts { #expect(Redaction.redact(text) == oracle(text), "\(text)") }
    }
}
