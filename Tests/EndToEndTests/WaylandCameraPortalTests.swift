import Foundation
import Testing
import TestSupport

/// `--source camera --camera-portal` against the real xdg-desktop-portal 1.16 of tools/testenv --wayland
/// (its Camera interface: AccessCamera, then OpenPipeWireRemote) and the real WirePlumber that grants
/// the portal's connection the camera nodes, with a camera (tools/testclients/pw-camera-source.c) on the
/// desktop's own PipeWire. The user's answer is the permission store's entry (devices/camera for the
/// host, "" ): what a user who allowed (or refused) the camera earlier left there. livepush runs as the
/// desktop's user with PIPEWIRE_REMOTE pointing nowhere, so every picture that arrives came through the
/// descriptor the portal opened. Serialized: the permission is one entry.
@Suite(.serialized, .enabled(if: TestEnvironment.isEnabled(.wayland), "needs tools/testenv --wayland (make test)"),
       .timeLimit(.minutes(10)))
struct WaylandCameraPortalTests {
    private func asUser() throws -> String { try TestEnvironment.value("LIVEPUSH_TEST_WAYLAND_AS_USER", of: .wayland) }

    /// Sets the host's camera permission in the desktop's permission store (xdg-permission-store).
    private func setCameraPermission(_ value: String) throws {
        let result = try ProcessRunner.run(try asUser(), [
            "gdbus", "call", "--session", "--dest", "org.freedesktop.impl.portal.PermissionStore", "--object-path",
            "/org/freedesktop/impl/portal/PermissionStore", "--method",
            "org.freedesktop.impl.portal.PermissionStore.SetPermission", "devices", "true", "camera", "", "['\(value)']",
        ])
        try #require(result.exitCode == 0, "SetPermission: \(result)")
    }

    /// A directory the desktop's user may write to.
    private func desktopUserDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("wlcamera")).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: path)
        return path
    }

    @Test func aCameraTheRealPortalGrantsIsRecordedWithItsColours() throws {
        let source = try PipeWireVideoSource(["--bars"], program: .camera, runner: try asUser())
        defer { source.stop() }
        try setCameraPermission("yes")
        let directory = try desktopUserDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/camera.mkv"
        let result = try ProcessRunner.run(try asUser(), [
            "env", "PIPEWIRE_REMOTE=/nonexistent/pipewire-0", BuiltProducts.path("livepush"), "screen", path,
            "--source", "camera", "--camera-portal", "--camera", source.name, "--size", "640x480",
            "--camera-format", "mjpeg", "--resolution", "1280x720", "--fps", "30", "--no-mic", "--duration", "3",
        ], timeoutSeconds: 90)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardError.contains("capture: capturing camera \(source.nodeID) '\(source.name)' "
            + "(LivePush test camera): MJPEG 640x480 at 30 fps, decoded into BGRx"), "\(result.standardError)")
        let frames = try MediaProbe.decodedFrameCount(path)
        #expect(frames >= 40, "\(frames) frames of a 3 s recording")
        try CameraCaptureTests.checkBars(path, frame: frames - 10, left: 160, width: 960, what: "through the portal")
    }

    @Test func aCameraRefusedByTheUserIsAClearErrorBeforeAnythingStarts() throws {
        try setCameraPermission("no")
        defer { try? setCameraPermission("yes") }
        let result = try ProcessRunner.run(try asUser(), [
            BuiltProducts.path("livepush-capture"), "--group", "nobody", "--source", "camera", "--camera-portal",
        ], timeoutSeconds: 60)
        #expect(result.exitCode == 1, "\(result)")
        #expect(result.standardError == "livepush-capture: camera access was refused (the Camera portal's AccessCamera "
            + "answered 1: the desktop's dialog, or its privacy settings); allow the camera and run again\n", "\(result)")
    }
}
