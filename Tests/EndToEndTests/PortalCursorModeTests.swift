import CaptureLink
import Foundation
import Testing
import TestSupport

/// The portal's advertised cursor modes and source types decide what is asked for: never a mode
/// it lacks (a real xdg-desktop-portal refuses SelectSources with "Unavailable cursor mode 4").
/// In PortalCaptureTests (serialized: one owner of the portal's bus name at a time).
extension PortalCaptureTests {
    /// Runs the helper against a mock portal advertising `cursorModes`, on a black producer whose
    /// pointer (a 16x16 white square at 40,30) is sent as metadata when asked for; returns the
    /// cursor_mode asked for, the frame's white pixels and flags, and the helper's messages.
    private func capture(cursorModes: Int, _ extra: [String] = []) throws
        -> (mode: Int?, white: Int, flags: FrameFlags, messages: String)
    {
        let source = try PipeWireVideoSource(["--size", "160x120", "--color", "000000", "--cursor"])
        defer { source.stop() }
        source.send("cursor 40 30")
        _ = source.waitForLine(startingWith: "cursor 40 30")
        let portal = try MockScreenCastPortal(nodeID: source.nodeID, cursorModes: cursorModes)
        defer { portal.stop() }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("state")).path
        let session = try PipeWireHelperSession(["--source", "portal", "--no-restore"] + extra,
                                                extraEnvironment: ["XDG_STATE_HOME": state, "PIPEWIRE_REMOTE": ""])
        let picture = try #require(session.picture(), "no frame: \(session.helper.errorSoFar)")
        let result = session.stop()
        #expect(result.exitCode == 0, "\(result)")
        var white = 0
        for y in 0..<120 { for x in 0..<160 where picture.rgb(x, y) == [255, 255, 255] { white += 1 } }
        let select = try #require(portal.calls.first { $0.method == "SelectSources" }?.options)
        return (select["cursor_mode"] as? Int, white, picture.info.flags, result.standardError)
    }

    @Test func cursorAsMetadataWhenThePortalOffersIt() throws {
        let run = try capture(cursorModes: 7)
        #expect(run.mode == 4)
        #expect(run.white == 256, "the pointer from the metadata is blended in")
        #expect(run.flags.contains(.cursor))
        #expect(!run.messages.contains("cursor modes"), "\(run.messages)")
    }

    @Test func cursorFallsBackToEmbeddedWithANoticeWhenThePortalHasNoMetadata() throws {
        let run = try capture(cursorModes: 3)
        #expect(run.mode == 2)
        #expect(run.messages.contains("livepush-capture: the ScreenCast portal offers cursor modes embedded, hidden "
            + "(AvailableCursorModes=3), not metadata; the pointer comes drawn into the picture (embedded)\n"),
                "\(run.messages)")
        // Embedded: the compositor draws it; the helper asks for no metadata and blends nothing.
        #expect(run.white == 0)
        #expect(!run.flags.contains(.cursor))
    }

    @Test func cursorFallsBackToHiddenWithANoticeWhenThatIsAllThePortalOffers() throws {
        let run = try capture(cursorModes: 1)
        #expect(run.mode == 1)
        #expect(run.messages.contains("livepush-capture: the ScreenCast portal offers cursor modes hidden "
            + "(AvailableCursorModes=1); the picture comes without the pointer (hidden)\n"), "\(run.messages)")
        #expect(run.white == 0)
    }

    @Test func noCursorOnAPortalWithoutHiddenTakesMetadataAndLeavesThePointerOut() throws {
        let run = try capture(cursorModes: 6, ["--no-cursor"])
        #expect(run.mode == 4)
        #expect(run.messages.contains("(AvailableCursorModes=6), not hidden; the pointer comes as metadata and is "
            + "left out of the picture"), "\(run.messages)")
        #expect(run.white == 0)
        #expect(!run.flags.contains(.cursor))
    }

    @Test func aSourceTypeThePortalLacksIsAConfigurationErrorBeforeAnyRequest() throws {
        let portal = try MockScreenCastPortal(nodeID: 1, sourceTypes: 1)
        defer { portal.stop() }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("state")).path
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"),
                                           ["--group", "g", "--source", "portal", "--portal-source", "window"],
                                           environment: ["XDG_STATE_HOME": state])
        #expect(result.exitCode == 78, "EX_CONFIG: a supervisor must not restart it")
        #expect(result.standardError == "livepush-capture: the ScreenCast portal offers monitor "
            + "(AvailableSourceTypes=1), not window; use --portal-source monitor\n")
        #expect(portal.calls.isEmpty, "no session is created for a request the portal cannot take")
    }

    @Test func anyOnAMonitorOnlyPortalAsksForMonitors() throws {
        let source = try PipeWireVideoSource(["--size", "64x48", "--color", "00ff00"])
        defer { source.stop() }
        let portal = try MockScreenCastPortal(nodeID: source.nodeID, sourceTypes: 1)
        defer { portal.stop() }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("state")).path
        let session = try PipeWireHelperSession(["--source", "portal", "--portal-source", "any", "--no-cursor"],
                                                extraEnvironment: ["XDG_STATE_HOME": state, "PIPEWIRE_REMOTE": ""])
        let picture = try #require(session.picture(), "no frame: \(session.helper.errorSoFar)")
        #expect(picture.rgb(32, 24) == [0, 255, 0])
        #expect(session.stop().exitCode == 0)
        let select = try #require(portal.calls.first { $0.method == "SelectSources" }?.options)
        #expect(select["types"] as? Int == 1)
    }
}
