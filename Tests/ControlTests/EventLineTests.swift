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
            for muted in [false, true] {
                writer.volume(volume, muted: muted, stamp: Self.stamp)
                #expect(String(decoding: writer.bytes, as: UTF8.self)
                    == Self.dictionaryLine("volume", ["volume": volume, "muted": muted], Self.stamp))
            }
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
}
