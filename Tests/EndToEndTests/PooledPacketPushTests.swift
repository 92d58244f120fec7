import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// Encoded packets travel in pooled buffers (issue 22): each buffer is reused as soon as the
    /// RTMP queue has sent it. A buffer handed out again while still queued would put one frame's
    /// bytes into another's place, which the decoder reports. So: a moving screen pushed with the mic
    /// long enough for the pools to wrap many times, and everything nginx recorded decodes cleanly.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire),
                    "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"), .timeLimit(.minutes(10)))
    struct PooledPacketPushTests {
        @Test func aMovingPushWithTheMicDecodesWithoutAnErrorAtNginx() throws {
            let key = UniqueName.make("pooled")
            let (painter, _) = try X11Painter.start(["--geometry", "640x360+200+100",
                                                     "timecode", "1e2a3a", "ffcc00", "120", "6"])
            defer { painter.closeInput(); _ = painter.finish() }
            let result = try ProcessRunner.run(BuiltProducts.path("livepush"), [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "200,100,640,360", "--resolution", "640x360", "--duration", "6", "--quiet",
            ], timeoutSeconds: 60)
            #expect(result.exitCode == 0, "\(result)")
            Thread.sleep(forTimeInterval: 0.5)
            let path = try TestEnvironment.recordedFile(key: key).path
            // Every packet of both streams decoded, and not one complaint from the decoders.
            let decode = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "null", "-"])
            #expect(decode.exitCode == 0 && decode.standardError.isEmpty, "\(decode)")
            let video = try MediaProbe.videoStream(path)
            let frames = Int(video["nb_read_frames"] ?? "") ?? 0
            #expect(video["codec_name"] == "h264" && (150...185).contains(frames),
                    "nginx recorded \(frames) video frames of about 180")
            let audio = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "a", "-count_packets",
                                                         "-show_entries", "stream=codec_name,nb_read_packets",
                                                         "-of", "csv=p=0", path])
            let fields = audio.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
            #expect(fields.first == "aac", "\(audio)")
            let audioPackets = Int(fields.last ?? "") ?? 0
            // 6 s of 48 kHz AAC is about 281 frames of 1024 samples.
            #expect((230...300).contains(audioPackets), "nginx recorded \(audioPackets) AAC frames of about 281")
        }
    }
}
