import FLV
import Foundation
import Media
import ReceivedMedia
import RTMP
import Testing
import TestSupport

/// The publisher's states against the real nginx-rtmp: media is sent only while publishing, a
/// call in another state is refused with a named error, each error names its step once, and a
/// stream whose timestamps pass 0xFFFFFF (4.7 hours) arrives whole.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"),
       .timeLimit(.minutes(10)))
struct RTMPPublisherStateTests {
    private let videoBody = FLV.avcVideoBody(lengthPrefixedNALUnits: [0, 0, 0, 2, 0x09, 0xF0], isKeyframe: false,
                                             compositionTimeMs: 0)

    @Test func mediaAfterFinishIsRefusedInStateFinished() throws {
        let publisher = try RTMPPublisher(url: try RTMPURL(try TestEnvironment.liveURL(key: UniqueName.make("finish"))))
        #expect(publisher.state == .publishing)
        publisher.finish()
        #expect(publisher.state == .finished)
        let calls: [(String, () throws(RTMPError) -> Void)] = [
            ("sendVideo", { () throws(RTMPError) in try publisher.sendVideo(videoBody, timestampMs: 40) }),
            ("sendAudio", { () throws(RTMPError) in try publisher.sendAudio([0xAF, 0x01, 0x21], timestampMs: 40) }),
            ("sendMetadata", { () throws(RTMPError) in try publisher.sendMetadata([("width", .number(320))]) }),
        ]
        for (name, call) in calls {
            do throws(RTMPError) {
                try call()
                Issue.record("\(name) after finish() was sent")
            } catch {
                #expect(error.kind == .wrongState, "\(error)")
                #expect(error.step == .send)
                #expect(error.detail.hasPrefix("\(name) refused in state finished (it needs publishing)"), "\(error)")
            }
        }
        publisher.finish()  // a second finish has no stream to end
        #expect(publisher.state == .finished)
    }

    @Test func aFailedSendNamesItsStepOnceAndLeavesThePublisherFailed() throws {
        let publisher = try RTMPPublisher(url: try RTMPURL(try TestEnvironment.liveURL(key: UniqueName.make("fail"))))
        publisher.abort()  // as another thread does when the output stops on a stalled network
        do throws(RTMPError) {
            try publisher.sendVideo(videoBody, timestampMs: 0)
            Issue.record("a send on an aborted connection succeeded")
        } catch {
            #expect(error.kind == .networkLost, "\(error)")
            #expect(error.description == "sending media: sending failed: Broken pipe")
        }
        #expect(publisher.state == .failed)
        do throws(RTMPError) {
            try publisher.sendVideo(videoBody, timestampMs: 40)
            Issue.record("a send after a failed one was tried")
        } catch {
            #expect(error.kind == .wrongState, "\(error)")
            #expect(error.detail.hasPrefix("sendVideo refused in state failed"), "\(error)")
        }
        publisher.finish()
        #expect(publisher.state == .failed)
    }

    @Test func aStreamPastTheExtendedTimestampBoundaryArrivesWhole() throws {
        // 2 s of noise at 2 Mbit/s (every picture over the 4096-byte chunk: type-3 chunks), its
        // timestamps starting 1 s before 0xFFFFFF ms, so the extended timestamp starts mid-stream.
        let key = UniqueName.make("extended")
        let publisher = try RTMPPublisher(url: try RTMPURL(try TestEnvironment.recordURL(key: key)))
        let (width, height, fps) = (320, 240, 30)
        let encoder = try H264Encoder(settings: H264EncoderSettings(width: width, height: height, fps: fps,
                                                                    bitrateKbps: 2000))
        let frame = try VideoFrame(width: width, height: height)
        let converter = FrameConverter()
        var generator = SystemRandomNumberGenerator()
        var noise = [UInt8](repeating: 0, count: width * height * 4)
        let baseMs: UInt32 = 0xFF_FFFF - 1000
        try publisher.sendMetadata([("width", .number(Double(width))), ("height", .number(Double(height))),
                                    ("framerate", .number(Double(fps))), ("videocodecid", .number(7))])
        let record = try #require(AVC.decoderConfigurationRecord(annexBExtradata: encoder.extradata))
        try publisher.sendVideo(FLV.avcSequenceHeaderBody(decoderConfigurationRecord: record), timestampMs: baseMs)
        var sent: [(timestampMs: UInt32, bytes: Int)] = []
        for index in 0..<(2 * fps) {
            for offset in stride(from: 0, to: noise.count, by: 8) {
                withUnsafeBytes(of: generator.next()) { noise.replaceSubrange(offset..<offset + 8, with: $0) }
            }
            let failure = noise.withUnsafeBytes { pixels -> PixelConversionError? in
                do throws(PixelConversionError) {
                    try converter.convertBGRx(pixels, width: width, height: height, strideBytes: width * 4, into: frame)
                    return nil
                } catch { return error }
            }
            if let failure { throw failure }
            for packet in try encoder.encode(frame, pts: Int64(index)) {
                let body = FLV.avcVideoBody(lengthPrefixedNALUnits: AVC.lengthPrefixed(annexB: packet.data),
                                            isKeyframe: packet.isKeyframe, compositionTimeMs: 0)
                let timestampMs = baseMs + UInt32(packet.dts * 1000 / Int64(fps))
                try publisher.sendVideo(body, timestampMs: timestampMs)
                sent.append((timestampMs, body.count))
            }
        }
        publisher.finish()
        let path = try TestEnvironment.closedRecording(key: key)
        let pictures = try FLVTagReader.tags(path).filter(\.isVideoPicture)
        // Pictures in several chunks on both sides of the boundary: type-3 chunks without, then with,
        // the extended timestamp.
        let chunked = sent.filter { $0.bytes > 4096 }
        #expect(chunked.filter { $0.timestampMs < 0xFF_FFFF }.count >= 20, "\(sent)")
        #expect(chunked.filter { $0.timestampMs > 0xFF_FFFF }.count >= 20, "\(sent)")
        #expect(pictures.count == sent.count, "nginx recorded \(pictures.count) of \(sent.count) pictures")
        #expect(pictures.map(\.dataBytes) == sent.map(\.bytes))
        let recordedSteps = zip(pictures.dropFirst(), pictures).map { $0.timestampMs - $1.timestampMs }
        let sentSteps = zip(sent.dropFirst(), sent).map { Int($0.timestampMs) - Int($1.timestampMs) }
        #expect(recordedSteps == sentSteps)
        #expect(try MediaProbe.decodeErrors(path) == "")
    }
}
