import Foundation
import Testing
import TestSupport

/// A real Wayland desktop of the test's own (`tools/testenv start DIR --wayland`, nothing else), so
/// that the test may kill its compositor without taking the shared one from the other tests.
final class PrivateWaylandDesktop {
    let directory: String
    let asUser: String

    init() throws {
        directory = "/tmp/" + UniqueName.make("lpwl")
        let started = try ProcessRunner.run(Repository.path("tools/testenv"), [
            "start", directory, "--no-x11", "--no-nginx", "--no-pipewire", "--wayland",
        ], timeoutSeconds: 60)
        guard started.exitCode == 0 else { throw Failed(what: "tools/testenv start --wayland: \(started)") }
        asUser = directory + "/wl/as-user"
    }

    struct Failed: Error, CustomStringConvertible {
        let what: String
        var description: String { what }
    }

    /// The PID testenv recorded for one of its services ("mutter", "wl-pipewire", ...).
    func pid(of service: String) throws -> Int32 {
        let lines = try String(contentsOfFile: directory + "/pids", encoding: .utf8).split(separator: "\n")
        guard let line = lines.first(where: { $0.hasPrefix(service + " ") }), let pid = Int32(line.split(separator: " ")[1])
        else { throw Failed(what: "no \(service) in \(directory)/pids") }
        return pid
    }

    func stop() {
        _ = try? ProcessRunner.run(Repository.path("tools/testenv"), ["stop", directory, "--clean"], timeoutSeconds: 30)
    }
}

/// The pause picture as decoded at 640x360: the last picture dimmed (black when none had arrived
/// yet), captioned SCREEN CAPTURE INTERRUPTED in white across the middle.
enum PausePicture {
    /// White pixels where the caption is (rows 172..<190, x 160..<480); over 200 when it is there.
    static func captionPixels(_ rgb: [UInt8]) -> Int {
        guard rgb.count == 640 * 360 * 3 else { return 0 }
        var count = 0
        for y in 172..<190 {
            for x in 160..<480 {
                let offset = (y * 640 + x) * 3
                if rgb[offset] > 200 && rgb[offset + 1] > 200 && rgb[offset + 2] > 200 { count += 1 }
            }
        }
        return count
    }
}

/// The compositor exiting during a recording: the capture is lost (not a planned end), the pause
/// picture takes its place and the recording goes on to its end.
@Suite(.serialized, .enabled(if: TestEnvironment.isEnabled(.wayland), "needs tools/testenv --wayland (make test)"),
       .timeLimit(.minutes(10)))
struct WaylandCompositorExitTests {
    @Test func compositorKilledDuringARecordingLeavesThePausePictureAndTheRecordingGoesOn() throws {
        let desktop = try PrivateWaylandDesktop()
        defer { desktop.stop() }
        let directory = desktop.directory + "/out"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory)
        let path = directory + "/exit.mkv"
        let recording = try ProcessRunner.start(desktop.asUser, [
            BuiltProducts.path("livepush"), "screen", "--source", "portal", "--no-restore", "--resolution", "640x360",
            "--fps", "30", "--duration", "8", path,
        ])
        #expect(recording.waitForError("livepush: screen capture started", timeoutSeconds: 30), "\(recording.errorSoFar)")
        #expect(kill(try desktop.pid(of: "mutter"), SIGKILL) == 0)
        let result = recording.finish()
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardError.contains("livepush: capture: the PipeWire node "), "\(result)")
        #expect(result.standardError.contains(" went away: the Wayland compositor exited ("), "\(result)")
        #expect(result.standardError.contains("accepts no connection); the screen cast is lost"))
        #expect(result.standardError.contains("livepush: screen capture interrupted; the output goes on with the pause "
            + "picture until the helper is back"))
        #expect(result.standardOutput.hasPrefix("Recorded 00:00:07.") || result.standardOutput.hasPrefix("Recorded 00:00:08"),
                "the recording lasts its 8 s: \(result)")
        let frames = try MediaProbe.decodedFrameCount(path)
        // At most 8 s at 30 fps; a loaded machine drops some (the pipeline skips rather than drifts).
        #expect((120...255).contains(frames), "8 s at 30 fps, got \(frames) frames")
        // The pause picture: the last picture dimmed (black when none had arrived yet), captioned
        // SCREEN CAPTURE INTERRUPTED in white across the middle.
        let rgb = try MediaProbe.decodedRGB(path, frame: frames - 5)
        #expect(rgb.count == 640 * 360 * 3)
        let captionPixels = PausePicture.captionPixels(rgb)
        #expect(captionPixels > 200, "the pause picture's caption: \(captionPixels) white pixels")
        let bar = (90 * 640 + 120) * 3
        #expect(rgb.count > bar + 2 && rgb[bar] < 160 && rgb[bar + 1] < 160, "no live yellow bar any more")
    }
}
