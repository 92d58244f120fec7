import FLV
import ReceivedMedia
import Foundation
import Testing
import TestSupport

/// A viewer who joins a running broadcast at nginx-rtmp: rtmpdump writes what arrives unchanged,
/// tag by tag, until `pictures` video pictures came (or 20 s). Used by `LateJoinTests` and
/// `KeyframeOnJoinTests`.
enum LateViewer {
    /// Records `url` into `file`; returns the complete tags (a tag the kill cut off is dropped
    /// from the file too, so that the decoder sees only whole tags) and the file's bytes.
    static func record(_ url: String, into file: String, pictures: Int = 30) throws -> (tags: [FLVTag], bytes: [UInt8]) {
        let viewer = try ProcessRunner.start(try ProcessRunner.which("rtmpdump"), ["-q", "-v", "-r", url, "-o", file])
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline && viewer.isRunning {
            if ((try? FLVTagReader.tags(file)) ?? []).filter(\.isVideoPicture).count >= pictures { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        // rtmpdump finishes a live stream slowly after SIGINT (over a minute here); what it wrote
        // so far is in the file, and a tag cut off at the end is left out by the reader.
        kill(viewer.processIdentifier, SIGKILL)
        _ = viewer.finish(timedOut: false)
        let tags = try FLVTagReader.tags(file)
        try #require(tags.filter(\.isVideoPicture).count >= pictures, "the late viewer got \(tags.count) tags")
        let bytes = [UInt8](try #require(FileManager.default.contents(atPath: file)))
        let last = try #require(tags.last)
        try Data(bytes[0..<last.dataOffset + last.dataBytes + 4]).write(to: URL(fileURLWithPath: file))
        return (try FLVTagReader.tags(file), bytes)
    }
}
