import FLV
import Foundation
import Media
import RTMP
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(10))) struct RTMPURLTests {
    @Test func urlSplitsIntoHostPortAppAndKey() throws {
        let url = try RTMPURL("rtmp://127.0.0.1:19350/live/room1/abc123?token=xyz")
        #expect(url.host == "127.0.0.1" && url.port == 19350)
        #expect(url.app == "live/room1")
        #expect(url.streamKey == "abc123?token=xyz")
        #expect(url.tcURL == "rtmp://127.0.0.1:19350/live/room1")
    }

    @Test func theKeyNeverAppearsInTheDescription() throws {
        let url = try RTMPURL("rtmp://example.invalid/live/secret-key")
        #expect(url.description == "rtmp://example.invalid/live/****")
        #expect(!"\(url)".contains("secret"))
    }

    @Test(.timeLimit(.minutes(10))) func rtmpsIsTLSOnPort443ByDefault() throws {
        let url = try RTMPURL("rtmps://ingest.example.invalid/app/secret-key")
        #expect(url.isSecure && url.port == 443)
        #expect(url.tcURL == "rtmps://ingest.example.invalid:443/app")
        #expect(url.description == "rtmps://ingest.example.invalid/app/****")
        let other = try RTMPURL("rtmps://127.0.0.1:4443/live/k")
        #expect(other.port == 4443 && other.description == "rtmps://127.0.0.1:4443/live/****")
        #expect(try !RTMPURL("rtmp://host/app/key").isSecure)
    }

    @Test func badURLsSayHowToWriteOne() {
        #expect(throws: RTMPURL.ParseError.missingAppOrKey) { try RTMPURL("rtmp://host/app") }
        #expect(throws: RTMPURL.ParseError.badPort("99999")) { try RTMPURL("rtmp://host:99999/app/key") }
        #expect(throws: RTMPURL.ParseError.notRTMP("http")) { try RTMPURL("http://host/app/key") }
    }
}

/// Our client against the real nginx-rtmp of the test environment; what nginx recorded is read
/// back with ffprobe.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct RTMPPublishTests {
    /// 2 s of 320x240 H.264 published as FLV tag bodies.
    private func publish(_ publisher: RTMPPublisher) throws {
        let encoder = try H264Encoder(settings: H264EncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: 400))
        let frame = try VideoFrame(width: 320, height: 240)
        frame.fillBlack()
        try publisher.sendMetadata([("width", .number(320)), ("height", .number(240)), ("framerate", .number(30)),
                                    ("videocodecid", .number(7))])
        let record = try #require(AVC.decoderConfigurationRecord(annexBExtradata: encoder.extradata))
        try publisher.sendVideo(FLV.avcSequenceHeaderBody(decoderConfigurationRecord: record), timestampMs: 0)
        for index in 0..<60 {
            for packet in try encoder.encode(frame, pts: Int64(index)) {
                try publisher.sendVideo(FLV.avcVideoBody(lengthPrefixedNALUnits: AVC.lengthPrefixed(annexB: packet.data),
                                                         isKeyframe: packet.isKeyframe, compositionTimeMs: 0),
                                        timestampMs: UInt32(packet.dts * 1000 / 30))
            }
        }
    }

    @Test func publishedStreamIsRecordedByNginxAndPlays() throws {
        let key = UniqueName.make("publish")
        let publisher = try RTMPPublisher(url: try RTMPURL(try TestEnvironment.recordURL(key: key)))
        try publish(publisher)
        publisher.finish()
        let stream = try MediaProbe.videoStream(try TestEnvironment.closedRecording(key: key))
        #expect(stream["codec_name"] == "h264" && stream["width"] == "320" && stream["height"] == "240")
        let frames = Int(stream["nb_read_frames"] ?? "") ?? 0
        #expect(frames >= 55, "nginx recorded \(frames) of 60 frames")
    }

    @Test func secondPublisherOfTheSameKeyIsRefusedAndSaysWhy() throws {
        let url = try RTMPURL(try TestEnvironment.liveURL(key: UniqueName.make("twice")))
        let first = try RTMPPublisher(url: url)
        defer { first.finish() }
        do throws(RTMPError) {
            _ = try RTMPPublisher(url: url)
            Issue.record("a second publisher of the same key was accepted")
        } catch {
            #expect(error.step == .publish)
            #expect(error.detail.hasPrefix("the server refused the stream key (NetStream.Publish.BadName)"))
        }
    }

    @Test func nothingListeningIsAConnectionRefusedError() throws {
        let url = try RTMPURL("rtmp://127.0.0.1:9/live/key")
        do throws(RTMPError) {
            _ = try RTMPPublisher(url: url, timeoutMs: 1000)
            Issue.record("connected to port 9")
        } catch {
            #expect(error.step == .connect)
            #expect(error.detail.contains("connection refused"))
        }
    }
}
