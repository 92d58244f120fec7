import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// Encoded packets travel in pooled buffers (issue 22): each buffer is reused as soon as the
    /// RTMP queue has sent it. A moving screen pushed with the mic long enough for the pools to wrap
    /// many times decodes cleanly at nginx; through a slow link, where the queue holds packets, no
    /// packet carries another's bytes (with the pool made to hand out held buffers, 49 did).
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire),
                    "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"), .timeLimit(.minutes(10)))
    struct PooledPacketPushTests {
        @Test func aMovingPushWithTheMicDecodesWithoutAnErrorAtNginx() throws {
            let key = UniqueName.make("pooled")
            let (painter, _) = try X11Painter.start(["--geometry", "640x360+200+100",
                                                     "timecode", "1e2a3a", "ffcc00", "120", "6"])
            defer { painter.closeInput(); _ = painter.finish() }
            let path = try pushAndDecode(url: try TestEnvironment.recordURL(key: key), key: key, options: [])
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

        /// The same through a link slower than the stream: the queue holds up to 2 s of packets (and
        /// their buffers; then congestion drops P-frames) while the encoder goes on taking buffers from
        /// its pool. A buffer handed out again while queued would carry a later frame's bytes: two
        /// packets alike at nginx (the time code changes every frame, so no two frames are).
        @Test func aQueueThatHoldsPacketsKeepsEachOnesBytes() throws {
            let key = UniqueName.make("pooledqueue")
            let (painter, _) = try X11Painter.start(["--geometry", "640x360+200+100",
                                                     "timecode", "1e2a3a", "ffcc00", "120", "6"])
            defer { painter.closeInput(); _ = painter.finish() }
            let rtmpPort = try TestEnvironment.value("LIVEPUSH_TEST_RTMP_PORT", of: .rtmp)
            let proxy = try ThrottlingProxy(targetPort: try #require(UInt16(rtmpPort)), rateKbps: 500)
            defer { proxy.close() }
            let path = try pushAndDecode(url: "rtmp://127.0.0.1:\(proxy.port)/record/\(key)", key: key, options: [
                "--quality", "custom", "--bitrate", "800", "--min-bitrate", "800", "--initial-bitrate", "800",
                "--no-auto-bitrate",
            ])
            let frames = Int(try MediaProbe.videoStream(path)["nb_read_frames"] ?? "") ?? 0
            // Half the stream's rate: keyframes and some P-frames get through, never all 180.
            #expect((20...170).contains(frames), "nginx recorded \(frames) video frames")
            try expectEveryVideoPacketDiffers(path)
        }

        /// `livepush push` of the painted region for 6 s to `url` (nginx's record application); then what
        /// nginx recorded for `key` must decode, both streams, without one complaint. Returns its path.
        private func pushAndDecode(url: String, key: String, options: [String]) throws -> String {
            let result = try ProcessRunner.run(BuiltProducts.path("livepush"), [
                "push", url, "--display", try TestEnvironment.display(), "--region", "200,100,640,360",
                "--resolution", "640x360", "--duration", "6", "--quiet",
            ] + options, timeoutSeconds: 60)
            #expect(result.exitCode == 0, "\(result)")
            let path = try TestEnvironment.closedRecording(key: key)
            let decode = try ProcessRunner.run(
                "ffmpeg", ["-nostdin", "-v", "error", "-i", path] + MediaProbe.nullOutput)
            #expect(decode.exitCode == 0 && decode.standardError.isEmpty, "\(decode)")
            return path
        }

        /// The MD5 of every video packet nginx recorded (`-c copy -f framemd5`), its filler data left out
        /// (NAL type 12: CBR pads every frame to the same ~3.3 KB): no two alike among those that carry a
        /// picture. A repeated picture (the screen held still for a frame) is an all-skip P-frame of a
        /// few dozen bytes without its filler, and two of those 16 or 32 frames apart are alike by right
        /// (frame_num and the picture order count wrap), so packets under 64 bytes are left out; a buffer
        /// reused while queued would repeat any packet, the large ones with it. (Hashed with the filler,
        /// two repeated pictures 32 frames apart, 37 bytes each padded to 3335, once failed this in CI.)
        private func expectEveryVideoPacketDiffers(_ path: String) throws {
            let hashes = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:v",
                                                          "-c", "copy", "-bsf:v", "filter_units=remove_types=12",
                                                          "-f", "framemd5", "-"])
            #expect(hashes.exitCode == 0, "\(hashes)")
            // stream_index, dts, pts, duration, size, hash
            let packets = hashes.standardOutput.split(separator: "\n").filter { !$0.hasPrefix("#") }
                .map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
                .filter { $0.count == 6 }
            let pictures = packets.filter { (Int($0[4]) ?? 0) >= 64 }.map { $0[5] }
            #expect(pictures.count >= 20, "\(pictures.count) of \(packets.count) video packets carry a picture: \(hashes)")
            let repeated = pictures.count - Set(pictures).count
            let twins = packets.indices.filter { index in
                (Int(packets[index][4]) ?? 0) >= 64 && packets[..<index].contains { $0[5] == packets[index][5] }
            }.map { index in "packet \(index) (dts \(packets[index][1]), \(packets[index][4]) bytes) is packet "
                + "\(packets.firstIndex { $0[5] == packets[index][5] }!)" }
            #expect(repeated == 0, "\(repeated) of \(pictures.count) video packets repeat another's bytes: \(twins)")
        }
    }
}
