import Foundation
import Testing
import TestSupport

/// The receiver-side measures the end-to-end tests rely on, against files whose content is known:
/// each must find what is there and report what is not.
@Suite(.timeLimit(.minutes(10)))
struct ReceivedMediaTests {
    /// 3 s, 320x240 at 30 fps of x11-paint's colours: a 120 px square, moving (`x` an expression
    /// of t) or still, absent from 1 s to 2 s (as the placeholder drops it).
    private func painterLike(x: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("square")).path + ".flv"
        let result = try ProcessRunner.run("ffmpeg", [
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
            "color=c=0x1e2a3a:s=320x240:r=30:d=3[bg];color=c=0xffcc00:s=120x120:r=30:d=3[sq];"
                + "[bg][sq]overlay=x='\(x)':y=60:enable='not(between(t,1,2))'",
            "-c:v", "libx264", "-bf", "0", "-pix_fmt", "yuv420p", "-g", "30", "-f", "flv", path,
        ])
        try #require(result.exitCode == 0, "\(result)")
        return path
    }

    @Test func theTagsOfAnFLVAreItsPicturesWithTheirTimesAndSizes() throws {
        let path = try painterLike(x: "mod(t*240,200)")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let tags = try FLVTagReader.tags(path)
        let pictures = tags.filter(\.isVideoPicture)
        let packets = try MediaProbe.packetCount(path)
        #expect(pictures.count == packets)
        #expect(pictures.count == 90 && pictures.filter(\.isKeyframe).count >= 3, "\(pictures.count) pictures")
        #expect(tags.contains { $0.type == 9 && $0.isSequenceHeader })
        #expect(try FLVTagReader.lastVideoMs(path) == 2967)
        let kbps = FLVTagReader.videoKbpsPerWindow(tags)
        #expect(kbps.count == 3 && kbps.allSatisfy { $0 > 0 }, "\(kbps)")
        let bytes = pictures.reduce(0) { $0 + $1.dataBytes }
        #expect(abs(kbps.reduce(0, +) * 1000 / 8 - bytes) <= 3 * 1000 / 8, "\(kbps) kbps, \(bytes) bytes")
        #expect(tags.last?.avcPacketType == 2, "ffmpeg's muxer ends with an end-of-sequence tag, not a picture")
        // A file cut inside the last picture's tag (nginx still writing): the complete tags only.
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let lastPictureBytes = try #require(pictures.last).dataBytes
        let cut = path + ".cut"
        defer { try? FileManager.default.removeItem(atPath: cut) }
        // The end: picture tag (11 + N bytes), its size (4), end-of-sequence tag (11 + 5), its size (4).
        try data.prefix(data.count - 24 - 4 - lastPictureBytes / 2).write(to: URL(fileURLWithPath: cut))
        #expect(try FLVTagReader.tags(cut).filter(\.isVideoPicture).count == 89)
    }

    @Test func aFileThatIsNoFLVOrIsMissingIsAnErrorNotAnEmptyList() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("noflv")).path
        #expect(throws: FLVTagReader.Malformed.self) { try FLVTagReader.tags(path) }
        try Data("not an flv file".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: FLVTagReader.Malformed.self) { try FLVTagReader.tags(path) }
        #expect(throws: ReceivedPictures.Failed.self) { try ReceivedPictures.decode(path) }
    }

    @Test func aMovingSquareAfterThePlaceholderIsTheLiveScreenBack() throws {
        let path = try painterLike(x: "mod(t*240,200)")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let pictures = try ReceivedPictures.decode(path)
        #expect(pictures.count == 90 && pictures.timesMs.last == 2967, "\(pictures.count) pictures")
        let recovery = PainterSquare(minShare: 0.1).recovery(after: 900, in: pictures)
        #expect(recovery.placeholderMs == 1000 && recovery.liveMs == 2033 && recovery.liveBackMs == 1133, "\(recovery)")
    }

    @Test func aStillSquareIsNotTheLiveScreen() throws {
        let path = try painterLike(x: "40")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recovery = PainterSquare(minShare: 0.1).recovery(after: 900, in: try ReceivedPictures.decode(path))
        #expect(recovery.placeholderMs == 1000 && recovery.liveMs == nil, "\(recovery)")
    }

    /// 3 s at 30 fps: uniform grey, then (1 s to 2 s) a black band across the middle with white
    /// strokes in it, as `drawNotice` writes it, then uniform near-black.
    @Test func theNoticeBandIsFoundAndAUniformPictureDarkOrBrightIsNot() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("notice")).path + ".flv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let notice = "enable='between(t,1,1.99)'"
        let strokes = [124, 160, 190].map { "drawbox=x=\($0):y=118:w=20:h=2:color=white:t=fill:\(notice)" }
        let result = try ProcessRunner.run("ffmpeg", [
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
            "color=c=0xb0b0b0:s=320x240:r=30:d=3,drawbox=x=0:y=0:w=320:h=240:color=0x101010:t=fill:enable='gte(t,2)',"
                + "drawbox=x=0:y=114:w=320:h=12:color=black:t=fill:\(notice)," + strokes.joined(separator: ","),
            "-c:v", "libx264", "-bf", "0", "-pix_fmt", "yuv420p", "-f", "flv", path,
        ])
        try #require(result.exitCode == 0, "\(result)")
        let shown = PlaceholderNotice().shown(in: try ReceivedPictures.decode(path, width: 320))
        #expect(shown.count == 90 && shown.firstIndex(of: true) == 30 && shown.filter { $0 }.count == 30
                    && shown[30..<60].allSatisfy { $0 }, "\(shown)")
    }
}
