import FLV
import Foundation
import ReceivedMedia
import Testing
import TestSupport

extension SharedScreen {
    /// A viewer who joins a running broadcast (issue 22 item 7): what nginx-rtmp sends it, read
    /// tag by tag as it arrived (rtmpdump writes the stream unchanged), and that it decodes. How
    /// long the join takes is a benchmark figure (`livepush-bench push`, `join_s=`), not a test.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct LateJoinTests {
        let livepush = BuiltProducts.path("livepush")

        @Test func aLateViewerGetsTheMetadataBothSequenceHeadersAndAKeyframeFirstAndDecodesIt() throws {
            let key = UniqueName.make("latejoin")
            let url = try TestEnvironment.liveURL(key: key)
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+400+100", "square", "102030", "f0c040",
                                                     "60", "4"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", url, "--display", try TestEnvironment.display(), "--region", "400,100,320,240",
                "--resolution", "320x240", "--fps", "30", "--gop", "2", "--mic", try TestEnvironment.microphone(),
                "--quiet", "--duration", "60",
            ])
            defer { _ = broadcast.stop() }
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            // Late: three statistics lines (seconds) into the broadcast, past its first keyframe.
            let liveDeadline = Date().addingTimeInterval(20)
            while broadcast.events.filter({ $0["type"] as? String == "statistics" }).count < 3 && Date() < liveDeadline {
                Thread.sleep(forTimeInterval: 0.2)
            }
            try #require(broadcast.command.isRunning, "\(broadcast.command.errorSoFar)")

            let file = FileManager.default.temporaryDirectory.appendingPathComponent(key + ".flv").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            let (tags, bytes) = try LateViewer.record(url, into: file)

            // 1. The metadata comes first, with what a player needs to set itself up without probing.
            let first = try #require(tags.first)
            #expect(first.type == 18, "first tag: \(first)")
            let values = try AMF0.decodeAll(Array(bytes[first.dataOffset..<first.dataOffset + first.dataBytes]))
            #expect(values.first?.stringValue == "onMetaData", "\(values)")
            let metadata = try #require(values.last)
            #expect(metadata["width"]?.numberValue == 320 && metadata["height"]?.numberValue == 240, "\(metadata)")
            #expect(metadata["framerate"]?.numberValue == 30, "\(metadata)")
            #expect(metadata["videocodecid"]?.numberValue == 7 && metadata["audiocodecid"]?.numberValue == 10,
                    "H.264 and AAC: \(metadata)")

            // 2. The AAC configuration before the first AAC frame.
            let audio = tags.filter { $0.type == 8 }
            try #require(!audio.isEmpty, "no audio reached the late viewer")
            #expect(audio.first?.aacPacketType == 0, "first audio tag: \(audio.first!)")
            #expect(audio.dropFirst().allSatisfy { $0.aacPacketType == 1 }, "one AudioSpecificConfig, then frames")

            // 3. Video starts with the AVC sequence header, then a keyframe: a joiner's first picture
            //    can be decoded, and it is a later keyframe than the broadcast's first (ts > 0).
            let video = tags.filter { $0.type == 9 }
            #expect(video.first?.isSequenceHeader == true, "first video tag: \(video.first!)")
            let pictures = video.filter(\.isVideoPicture)
            let firstPicture = try #require(pictures.first)
            #expect(firstPicture.isKeyframe, "first picture: \(firstPicture)")
            #expect(firstPicture.timestampMs >= 2000, "joined after the first GOP: \(firstPicture)")
            #expect(video.filter(\.isSequenceHeader).count == 1, "one sequence header: \(video.prefix(3))")

            // 4. What the late viewer got decodes without an error.
            let decodeErrors = try MediaProbe.decodeErrors(file)
            #expect(decodeErrors.isEmpty, "ffmpeg -v error on the late viewer's file: \(decodeErrors)")
            #expect(try MediaProbe.decodedFrameCount(file) >= 30)
        }
    }
}
