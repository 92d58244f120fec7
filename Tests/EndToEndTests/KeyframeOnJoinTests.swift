import FLV
import Foundation
import ReceivedMedia
import Testing
import TestSupport

extension SharedScreen {
    /// A keyframe when a viewer joins (issue 22 item 7): nginx-rtmp's `exec_play` on the test
    /// environment's `live-kf` application runs `livepush ctl --socket PATH keyframe`, as docs/guide.md
    /// shows, and the viewer's video starts at that forced keyframe instead of the next one of the
    /// GOP. What is asserted is what the viewer got (rtmpdump's file), in stream time; how fast a
    /// join is lives in `livepush-bench push` (`e2e join ... keyframe_on_join=exec_play`).
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp)
                        && TestEnvironment.isEnabled(.pipewire), "needs the test Xvfb, nginx-rtmp and PipeWire (make test)"),
           .timeLimit(.minutes(10)))
    struct KeyframeOnJoinTests {
        let livepush = BuiltProducts.path("livepush")
        /// Long enough that the GOP's own next keyframe (about 10 s) is far from the joiner's first one.
        static let gopMs = 10_000

        @Test func aViewerWhoJoinsStartsAtAForcedKeyframeAtOnceCountedAndDecodable() throws {
            let key = UniqueName.make("kfjoin")
            let url = try TestEnvironment.keyframeOnJoinURL(key: key)
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+400+100", "square", "102030", "f0c040",
                                                     "60", "4"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", url, "--display", try TestEnvironment.display(), "--region", "400,100,320,240",
                "--resolution", "320x240", "--fps", "30", "--gop", String(Self.gopMs / 1000),
                "--mic", try TestEnvironment.microphone(), "--quiet", "--duration", "60",
            ])
            defer { _ = broadcast.stop() }
            let socket = try TestEnvironment.value("XDG_RUNTIME_DIR", of: .pipewire)
                + "/livepush/\(broadcast.name).control"
            try TestEnvironment.setOnPlayHook(key: key, command: "exec \(livepush) ctl --socket \(socket) keyframe")
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            // Late: three statistics lines (seconds) into the broadcast, well past its first keyframe.
            let liveDeadline = Date().addingTimeInterval(20)
            while broadcast.events.filter({ $0["type"] as? String == "statistics" }).count < 3 && Date() < liveDeadline {
                Thread.sleep(forTimeInterval: 0.2)
            }
            try #require(broadcast.command.isRunning, "\(broadcast.command.errorSoFar)")
            func forcedSoFar() -> Int {
                broadcast.events.filter { $0["type"] as? String == "statistics" }
                    .compactMap { $0["keyframesForced"] as? Int }.max() ?? 0
            }
            try #require(forcedSoFar() == 0, "no keyframe forced before a viewer joined")

            let file = FileManager.default.temporaryDirectory.appendingPathComponent(key + ".flv").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            let (tags, _) = try LateViewer.record(url, into: file)

            // 1. The viewer's video starts with the AVC header, then a keyframe close in stream time to
            //    where the viewer joined: its first audio (nginx sends a joiner audio at once, video
            //    from the next keyframe). Without the hook that keyframe is the GOP's next, up to 10 s
            //    later (seen: 4630 ms after the first audio).
            let video = tags.filter { $0.type == 9 }
            #expect(video.first?.isSequenceHeader == true, "first video tag: \(video.first!)")
            let firstPicture = try #require(video.first { $0.isVideoPicture })
            let firstAudio = try #require(tags.first { $0.type == 8 && $0.aacPacketType == 1 }, "no audio")
            #expect(firstPicture.isKeyframe, "first picture: \(firstPicture)")
            #expect(firstPicture.timestampMs >= 2000, "joined after the first GOP started: \(firstPicture)")
            #expect(firstPicture.timestampMs - firstAudio.timestampMs < 1000,
                    "the first picture \(firstPicture.timestampMs) ms, the first audio \(firstAudio.timestampMs) ms")

            // 2. The statistics count the forced keyframe.
            let countDeadline = Date().addingTimeInterval(10)
            while forcedSoFar() < 1 && Date() < countDeadline { Thread.sleep(forTimeInterval: 0.2) }
            #expect(forcedSoFar() == 1, "keyframesForced in the statistics: \(forcedSoFar())")

            // 3. What the viewer got decodes without an error.
            let decodeErrors = try MediaProbe.decodeErrors(file)
            #expect(decodeErrors.isEmpty, "ffmpeg -v error on the viewer's file: \(decodeErrors)")
            #expect(try MediaProbe.decodedFrameCount(file) >= 30)
        }

        @Test func aSecondRequestWithinASecondGetsTheKeyframeAtItsEndAndSaysSo() throws {
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+400+100", "square", "102030", "f0c040",
                                                     "60", "4"])
            defer { painter.closeInput(); _ = painter.finish() }
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.liveURL(key: UniqueName.make("kfstorm")), "--display",
                try TestEnvironment.display(), "--region", "400,100,320,240", "--resolution", "320x240", "--fps", "30",
                "--gop", "10", "--no-mic", "--quiet", "--duration", "60",
            ])
            defer { _ = broadcast.stop() }
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            // Live for a second: past the first keyframe.
            let liveDeadline = Date().addingTimeInterval(20)
            while broadcast.events.filter({ $0["type"] as? String == "statistics" }).count < 1 && Date() < liveDeadline {
                Thread.sleep(forTimeInterval: 0.2)
            }
            let first = try broadcast.ctl(["keyframe"])
            #expect(first.result.exitCode == 0, "\(first.result)")
            let firstResult = try #require(first.answer?["result"] as? [String: Any])
            #expect((firstResult["keyframe"] as? [String: Any])?["forced"] as? Bool == true, "\(firstResult)")
            // let it run: 0.1 s, so that the keyframe just forced is past the 40 ms in which a request
            // counts it as recent (then the answer is "none forced now"), and well within the second.
            Thread.sleep(forTimeInterval: 0.1)
            let second = try broadcast.ctl(["keyframe"])
            #expect(second.result.exitCode == 0, "not an error: \(second.result)")
            let keyframe = try #require((second.answer?["result"] as? [String: Any])?["keyframe"] as? [String: Any])
            let reason = try #require(keyframe["reason"] as? String)
            // Within the second (a ctl takes well under it): deferred to its end, not a second one now.
            #expect(reason.hasPrefix("a keyframe in ") && reason.hasSuffix(" ms (at most one per 1000 ms)"), "\(reason)")
            #expect(keyframe["forced"] as? Bool == true, "\(keyframe)")
            let countDeadline = Date().addingTimeInterval(10)
            func forced() -> Int {
                broadcast.events.filter { $0["type"] as? String == "statistics" }
                    .compactMap { $0["keyframesForced"] as? Int }.max() ?? 0
            }
            while forced() < 2 && Date() < countDeadline { Thread.sleep(forTimeInterval: 0.2) }
            #expect(forced() == 2, "the first, then the deferred one: \(forced())")
            let bad = try broadcast.ctl(["keyframe", "--follow-up", "20000"])
            #expect(bad.result.exitCode == 2, "\(bad.result)")
            #expect(bad.result.standardError.contains("from 100 to 10000"), "\(bad.result.standardError)")
        }
    }
}
