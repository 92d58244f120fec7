import Foundation
import Media
import Testing

/// x264's options SEI in every keyframe, and the benchmark's pictures drawn in memory.
@Suite(.timeLimit(.minutes(10))) struct EncoderTuningTests {
    private func text(_ data: [UInt8]) -> String {
        String(decoding: data.map { $0 < 0x20 || $0 > 0x7e ? 0x20 : $0 }, as: UTF8.self)
    }

    private func encode(crf: Int?, preset: X264Preset, frames: Int) throws -> [EncodedVideoPacket] {
        var settings = H264EncoderSettings(width: 320, height: 240, fps: 10, bitrateKbps: 500)
        settings.gopSeconds = 1
        settings.crf = crf
        settings.tuning = H264EncoderTuning(preset: preset, tune: crf == nil ? .zerolatency : nil, threads: 2)
        let encoder = try H264Encoder(settings: settings)
        let content = try BenchContent(.scroll, width: 320, height: 240)
        let picture = try VideoFrame(width: 320, height: 240)
        var packets: [EncodedVideoPacket] = []
        for index in 0..<frames {
            content.draw(step: index * 6, into: picture)
            packets += try encoder.encode(picture, pts: Int64(index))
        }
        return packets + (try encoder.encode(nil, pts: 0))
    }

    @Test func everyKeyframeCarriesX264sOptionsAndNoOtherFrameDoes() throws {
        let packets = try encode(crf: nil, preset: .ultrafast, frames: 35)
        let keyframes = packets.filter(\.isKeyframe)
        #expect(keyframes.count == 4, "\(keyframes.map(\.pts))")
        // The first access unit holds x264's own copies (libavcodec's global-header SEI and the
        // in-stream one); every later keyframe holds exactly the one put back, other frames none.
        for packet in packets {
            let options = text(packet.data).components(separatedBy: "x264 - core").count - 1
            if packet.pts == 0 {
                #expect(options >= 1)
            } else {
                #expect(options == (packet.isKeyframe ? 1 : 0), "frame \(packet.pts): \(options) option strings")
            }
        }
        let options = text(keyframes[2].data)
        #expect(options.contains(" rc=cbr ") && options.contains(" bitrate=500 ") && options.contains(" subme=0 "))
        #expect(options.contains(" threads=2 ") && options.contains(" sliced_threads=1 "))
    }

    @Test func constantQualityEncodeSaysCrfAndHasNoBitrate() throws {
        let packets = try encode(crf: 26, preset: .faster, frames: 12)
        let keyframe = try #require(packets.first { $0.isKeyframe })
        let options = text(keyframe.data)
        #expect(options.contains(" rc=crf ") && options.contains(" crf=26.0 ") && options.contains(" subme=4 "),
                "\(options)")
        #expect(!options.contains(" filler=1"), "\(options)")
        #expect(packets.count == 12)
    }

    @Test func scrollContentMovesEveryRowAndSquareContentOnlyItsBand() throws {
        let scroll = try BenchContent(.scroll, width: 320, height: 240)
        let square = try BenchContent(.square, width: 640, height: 480)
        let a = try VideoFrame(width: 320, height: 240), b = try VideoFrame(width: 320, height: 240)
        scroll.draw(step: 10, into: a)
        scroll.draw(step: 11, into: b)
        let changedRows = (0..<240).filter { y in (0..<320).contains { a.yuv(x: $0, y: y).y != b.yuv(x: $0, y: y).y } }
        #expect(changedRows.count == 240)
        let c = try VideoFrame(width: 640, height: 480), d = try VideoFrame(width: 640, height: 480)
        square.draw(step: 10, into: c)
        square.draw(step: 11, into: d)
        // Rows above the square and below the code row stay as they were.
        #expect((70..<120).allSatisfy { y in (0..<640).allSatisfy { c.yuv(x: $0, y: y) == d.yuv(x: $0, y: y) } })
        #expect((120..<360).contains { y in (0..<640).contains { c.yuv(x: $0, y: y) != d.yuv(x: $0, y: y) } })
    }
}
