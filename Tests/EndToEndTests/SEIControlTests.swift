import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush ctl NAME sei` on a real `livepush push` of the X11 screen: the messages are in
    /// what nginx recorded, with the UUID docs/guide.md gives, their repeat counts and keyframes.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct SEIControlTests {
        /// 9e9fd6a1-7229-4520-b968-715582e61058, as documented.
        static let uuid: [UInt8] = [0x9E, 0x9F, 0xD6, 0xA1, 0x72, 0x29, 0x45, 0x20, 0xB9, 0x68, 0x71, 0x55, 0x82, 0xE6, 0x10, 0x58]

        @Test func ctlSEIPutsTheTextIntoTheFramesNginxReceives() throws {
            let key = UniqueName.make("ctlsei")
            let broadcast = try LiveBroadcast(livepush: BuiltProducts.path("livepush"), [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "0,0,320,240", "--resolution", "320x240", "--fps", "30", "--gop", "1", "--no-mic", "--quiet",
                "--duration", "30",
            ])
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            Thread.sleep(forTimeInterval: 1)  // let it run: 1 s of stream (a keyframe a second) before the messages
            let plain = try broadcast.ctl(["sei", #"{"q":1}"#, "--repeat", "4"])
            #expect(plain.result.exitCode == 0 && plain.answer?["ok"] as? Bool == true, "\(plain.result)")
            let keyframes = try broadcast.ctl(["sei", "on keyframes", "--keyframe-only", "--repeat", "2"])
            #expect(keyframes.result.exitCode == 0, "\(keyframes.result)")
            let bad = try broadcast.ctl(["sei", "x", "--repeat", "0"])
            #expect(bad.result.exitCode == 2 && bad.result.standardError.contains("--repeat takes 1 to 1000 frames"), "\(bad.result)")
            Thread.sleep(forTimeInterval: 3)  // two keyframes a GOP (1 s) apart, and the frames to nginx
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            let units = try H264AccessUnits.read(try TestEnvironment.closedRecording(key: key), uuid: Self.uuid)
            let plainUnits = units.indices.filter { units[$0].messages.contains(#"{"q":1}"#) }
            let keyUnits = units.indices.filter { units[$0].messages.contains("on keyframes") }
            #expect(plainUnits.count == 4 && (plainUnits.last ?? 0) - (plainUnits.first ?? 0) == 3, "\(plainUnits)")
            #expect(keyUnits.count == 2 && keyUnits.allSatisfy { units[$0].isKeyframe }, "\(keyUnits)")
            #expect(units.filter { !$0.messages.isEmpty }.count == Set(plainUnits + keyUnits).count)
        }
    }
}
