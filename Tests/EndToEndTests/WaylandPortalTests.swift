import Foundation
import Testing
import TestSupport

/// `livepush screen --source portal` against a real desktop: mutter's headless compositor, the
/// real xdg-desktop-portal with its GNOME backend, and the real Share dialog, answered by
/// tools/testclients/portal-approver.py pressing keys through mutter (tools/testenv --wayland).
/// What is drawn is tools/testclients/wayland-scene.py: colour bars over the top half, a moving
/// white square in the bottom half. livepush runs as the desktop's user, as an application on that
/// desktop would. Serialized: one dialog at a time.
@Suite(.serialized, .enabled(if: TestEnvironment.isEnabled(.wayland), "needs tools/testenv --wayland (make test)"),
       .timeLimit(.minutes(10)))
struct WaylandPortalTests {
    private let livepush = BuiltProducts.path("livepush")

    /// The scene's bars, left to right, as decoded at 640x360: (centre x, RGB).
    private static let bars: [(Int, [Int])] = [(40, [255, 255, 255]), (120, [255, 255, 0]), (200, [0, 255, 255]),
                                               (280, [0, 255, 0]), (360, [255, 0, 255]), (440, [255, 0, 0]),
                                               (520, [0, 0, 255]), (600, [0, 0, 0])]

    /// A directory the desktop's user may write to.
    private func desktopUserDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("wayland")).path
        try FileManager.default.createDirectory(atPath: path + "/state", withIntermediateDirectories: true)
        for directory in [path, path + "/state"] {
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory)
        }
        return path
    }

    /// Runs `livepush ARGUMENTS` as the desktop's user with XDG_STATE_HOME (the restore token's home) in `directory`.
    private func livepushAsDesktopUser(_ arguments: [String], in directory: String) throws -> CommandResult {
        let asUser = try TestEnvironment.value("LIVEPUSH_TEST_WAYLAND_AS_USER", of: .wayland)
        return try ProcessRunner.run(asUser, ["env", "XDG_STATE_HOME=\(directory)/state", livepush] + arguments,
                                     timeoutSeconds: 90)
    }

    /// How many Share dialogs the approver has answered.
    private func dialogsAnswered() throws -> Int {
        let path = try TestEnvironment.value("LIVEPUSH_TEST_WAYLAND_APPROVALS", of: .wayland)
        return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count
    }

    private func pixel(_ rgb: [UInt8], _ x: Int, _ y: Int) -> [Int] {
        let offset = (y * 640 + x) * 3
        return rgb.count >= offset + 3 ? rgb[offset..<offset + 3].map(Int.init) : []
    }

    /// Checks the bars in one decoded 640x360 frame, and returns the moving square's left edge on row 270.
    private func checkScene(_ path: String, frame: Int) throws -> Int? {
        let rgb = try MediaProbe.decodedRGB(path, frame: frame)
        #expect(rgb.count == 640 * 360 * 3, "frame \(frame) of \(path) is not 640x360")
        for (x, colour) in Self.bars {
            let decoded = pixel(rgb, x, 90)
            #expect(decoded.count == 3 && zip(decoded, colour).allSatisfy { abs($0 - $1) <= 16 },
                    "frame \(frame): bar at x=\(x) decoded \(decoded), the scene draws \(colour)")
        }
        return (0..<640).first { x in pixel(rgb, x, 270).allSatisfy { $0 > 200 } && pixel(rgb, x, 270).count == 3 }
    }

    @Test func recordingThroughTheRealPortalHoldsTheScenesBarsAndMovingSquare() throws {
        let directory = try desktopUserDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/portal.mkv"
        let dialogs = try dialogsAnswered()
        let result = try livepushAsDesktopUser(["screen", "--source", "portal", "--no-restore", "--resolution", "640x360",
                                                "--fps", "30", "--duration", "4", path], in: directory)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardError.contains("livepush: capture: capturing PipeWire node "), "\(result)")
        #expect(result.standardError.contains("'mutter': BGRx 1280x720"), "the compositor's output, shared memory")
        #expect(try dialogsAnswered() == dialogs + 1, "the real Share dialog was shown and answered once")
        let frames = try MediaProbe.decodedFrameCount(path)
        // At most 4 s at 30 fps; a loaded machine drops some (the pipeline skips rather than drifts).
        #expect((60...125).contains(frames), "4 s at 30 fps, got \(frames) frames")
        // The first second may be the placeholder: the recording starts before the dialog is answered.
        let first = try checkScene(path, frame: frames - 25)
        let second = try checkScene(path, frame: frames - 5)
        let positions = "\(String(describing: first)), \(String(describing: second))"
        #expect(first != nil && second != nil, "the white square is on row 270 (at \(positions))")
        #expect(first != second, "the square moves (100 px/s here): the picture follows the compositor")
    }

    @Test(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx"))
    func pushToNginxThroughTheRealPortalArrivesWithTheScenesBars() throws {
        let directory = try desktopUserDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = UniqueName.make("wayland")
        let result = try livepushAsDesktopUser(["screen", "--source", "portal", "--no-restore", "--resolution", "640x360",
                                                "--fps", "30", "--duration", "3", try TestEnvironment.recordURL(key: key)],
                                               in: directory)
        #expect(result.exitCode == 0, "\(result)")
        let recorded = try TestEnvironment.recordedFile(key: key).path
        let frames = try MediaProbe.decodedFrameCount(recorded)
        #expect(frames >= 40, "nginx recorded \(frames) frames of a 3 s push")
        #expect(try checkScene(recorded, frame: frames / 2) != nil)
    }

    /// What this portal does with restore tokens: it hands one out (and the same one again), but the
    /// dialog comes back every time; livepush sends the saved token, keeps the new one and asks cleanly.
    @Test func restoreTokenIsSavedAndThisPortalAsksAgain() throws {
        let directory = try desktopUserDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tokenPath = directory + "/state/livepush/screencast-restore-token"
        let dialogs = try dialogsAnswered()
        let first = try livepushAsDesktopUser(["screen", "--source", "portal", "--resolution", "640x360", "--duration",
                                               "1", directory + "/first.mkv"], in: directory)
        #expect(first.exitCode == 0, "\(first)")
        let token = try String(contentsOfFile: tokenPath, encoding: .utf8)
        #expect(token.count > 1 && token.hasSuffix("\n"), "a restore token was saved: '\(token)'")
        let second = try livepushAsDesktopUser(["screen", "--source", "portal", "--resolution", "640x360", "--duration",
                                                "1", directory + "/second.mkv"], in: directory)
        #expect(second.exitCode == 0, "\(second)")
        #expect(!second.standardError.contains("restore token"), "no warning about the token: \(second)")
        #expect(try dialogsAnswered() == dialogs + 2, "xdg-desktop-portal-gnome 43 shows the dialog again")
        #expect(try MediaProbe.decodedFrameCount(directory + "/second.mkv") >= 20)
        #expect(FileManager.default.fileExists(atPath: tokenPath))
    }

    /// The cursor modes this portal offers (7) as asked for by livepush, seen on the desktop's bus
    /// (dbus-monitor): metadata by default, hidden with --no-cursor; the real portal takes both.
    @Test func cursorModeAskedOfTheRealPortalIsMetadataByDefaultAndHiddenWithNoCursor() throws {
        let directory = try desktopUserDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let monitor = try ProcessRunner.start("dbus-monitor", [
            "--address", try TestEnvironment.value("LIVEPUSH_TEST_WAYLAND_BUS", of: .wayland),
            "type='method_call',interface='org.freedesktop.portal.ScreenCast',member='SelectSources'",
        ])
        defer {
            kill(monitor.processIdentifier, SIGKILL)  // it may ignore SIGINT and SIGTERM as started here
            _ = monitor.finish()
        }
        #expect(monitor.waitForLine(startingWith: "signal", timeoutSeconds: 10) != nil, "dbus-monitor did not start")
        for (name, extra) in [("metadata", [String]()), ("hidden", ["--no-cursor"])] {
            let path = directory + "/\(name).mkv"
            let result = try livepushAsDesktopUser(["screen", "--source", "portal", "--no-restore", "--resolution",
                                                    "640x360", "--duration", "2", path] + extra, in: directory)
            #expect(result.exitCode == 0, "\(result)")
            #expect(!result.standardError.contains("cursor modes"), "no fallback notice: \(result)")
            #expect(try MediaProbe.decodedFrameCount(path) >= 20)
        }
        // dbus-monitor prints each dictionary entry as `string "cursor_mode"` and then `variant uint32 N`.
        let lines = monitor.outputSoFar.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        let modes = lines.indices.filter { lines[$0] == "string \"cursor_mode\"" && $0 + 1 < lines.count }
            .map { lines[$0 + 1] }
        #expect(modes == ["variant uint32 4", "variant uint32 1"], "SelectSources' cursor_mode: \(modes)")
    }

    /// Issue 35 item 1 on Wayland: mutter alone has no lock screen (GNOME Shell's screen shield owns
    /// org.gnome.ScreenSaver), so the desktop's signal is sent on its session bus as GNOME Shell sends it
    /// (`gdbus emit ... org.gnome.ScreenSaver.ActiveChanged true`, then false); the recording decoded: the
    /// scene, then the pause picture (red) while locked, then the scene again.
    @Test func aLockSignalOnTheSessionBusShowsThePausePictureUntilTheUnlock() throws {
        let directory = try desktopUserDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let red = try ReceivedStream.redPicture(width: 640, height: 360, at: directory + "/red.png")
        let path = directory + "/locked.mkv"
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: red)
        let asUser = try TestEnvironment.value("LIVEPUSH_TEST_WAYLAND_AS_USER", of: .wayland)
        let run = try ProcessRunner.start(asUser, ["env", "XDG_STATE_HOME=\(directory)/state", livepush, "screen",
                                                   "--source", "portal", "--no-restore", "--resolution", "640x360",
                                                   "--fps", "30", "--pause-image", red, "--duration", "14", path])
        func emit(_ active: String) throws {
            let result = try ProcessRunner.run(asUser, ["gdbus", "emit", "--session", "--object-path",
                                                        "/org/gnome/ScreenSaver", "--signal",
                                                        "org.gnome.ScreenSaver.ActiveChanged", active])
            #expect(result.exitCode == 0, "gdbus emit: \(result)")
        }
        #expect(run.waitForError("capturing PipeWire node", timeoutSeconds: 30), "\(run.errorSoFar)")
        Thread.sleep(forTimeInterval: 3)  // phase 1: the scene
        try emit("true")
        #expect(run.waitForError("the screen is locked", timeoutSeconds: 5), "\(run.errorSoFar)")
        Thread.sleep(forTimeInterval: 3)  // phase 2: locked
        try emit("false")
        #expect(run.waitForError("the screen is unlocked", timeoutSeconds: 5), "\(run.errorSoFar)")
        let result = run.finish(timedOut: !waitUntil(timeoutSeconds: 40) { !run.isRunning })
        #expect(result.exitCode == 0, "\(result)")
        let frames = try ReceivedStream.tinyFrames(path).map(ReceivedStream.redOrGreen)
        let redRun = ReceivedStream.longestRun(frames) { $0 == "red" }
        #expect(redRun.count >= 60, "about 3 s of the pause picture while locked: \(redRun) of \(frames.count)")
        #expect(redRun.start >= 30 && redRun.end + 30 < frames.count, "the scene before and after: \(redRun)")
        // The scene's bars before the lock and after the unlock; nothing red between the scene's pictures.
        #expect(try checkScene(path, frame: redRun.start - 10) != nil)
        // The decoder's own count for the frame index (the 4x4 pass may count a frame more or less).
        let decoded = try MediaProbe.decodedFrameCount(path)
        #expect(decoded + 30 > redRun.end, "\(decoded) frames decoded, the lock ended at \(redRun.end)")
        #expect(try checkScene(path, frame: max(redRun.end + 15, decoded - 15)) != nil)
    }
}
