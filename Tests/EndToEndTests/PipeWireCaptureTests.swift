import CaptureLink
import Foundation
import Testing
import TestSupport

/// A frame copied out of the ring, plane by plane (rows without padding).
struct RingPicture {
    let info: FrameInfo
    let planes: [[UInt8]]
    let rowBytes: [Int]

    /// R, G, B of a packed pixel, whatever the channel order of the format.
    func rgb(_ x: Int, _ y: Int) -> [UInt8] {
        let p = Array(planes[0][(y * rowBytes[0] + x * 4)..<(y * rowBytes[0] + x * 4 + 3)])
        switch info.format {
        case .bgrx, .bgra: return [p[2], p[1], p[0]]
        default: return p
        }
    }

    /// Y, U, V of a pixel of an NV12 or I420 frame.
    func yuv(_ x: Int, _ y: Int) -> [UInt8] {
        let luma = planes[0][y * rowBytes[0] + x]
        if info.format == .nv12 {
            let c = (y / 2) * rowBytes[1] + (x / 2) * 2
            return [luma, planes[1][c], planes[1][c + 1]]
        }
        let c = (y / 2) * rowBytes[1] + x / 2
        return [luma, planes[1][c], planes[2][c]]
    }
}

/// A pusher endpoint in the test process, and a livepush-capture process feeding it from PipeWire.
final class PipeWireHelperSession {
    let recorder = EventRecorder()
    let endpoint: PusherEndpoint
    let helper: RunningCommand

    init(_ arguments: [String], extraEnvironment: [String: String] = [:], maxSize: (UInt32, UInt32)? = nil) throws {
        let runtime = privateRuntimeDirectory()
        var configuration = PusherEndpointConfiguration(group: "pw")
        configuration.runtimeDirectory = runtime
        if let (width, height) = maxSize {
            configuration.maxWidth = width
            configuration.maxHeight = height
        }
        configuration.fps = 30
        let recorder = self.recorder
        endpoint = try PusherEndpoint(configuration: configuration) { recorder.record($0) }
        helper = try ProcessRunner.start(BuiltProducts.path("livepush-capture"), ["--group", "pw"] + arguments,
                                         environment: ["XDG_RUNTIME_DIR": runtime]
                                            .merging(try PipeWireVideoSource.environment()) { $1 }
                                            .merging(extraEnvironment) { $1 })
    }

    /// The first frame after `afterSequence` that satisfies `accept`, copied out of the ring.
    func picture(after afterSequence: UInt64 = 0, timeoutSeconds: Double = 5,
                 where accept: (FrameInfo) -> Bool = { _ in true }) -> RingPicture?
    {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            if let frame = endpoint.acquireLatestFrame() {
                defer { frame.release() }
                let info = frame.info
                if info.sequence > afterSequence && accept(info) {
                    let width = info.width, height = info.height, cw = (width + 1) / 2, ch = (height + 1) / 2
                    let layout: [(Int, Int)]
                    switch info.format {
                    case .nv12: layout = [(width, height), (cw * 2, ch)]
                    case .i420: layout = [(width, height), (cw, ch), (cw, ch)]
                    default: layout = [(width * 4, height)]
                    }
                    var planes: [[UInt8]] = []
                    frame.withPlanes { buffers in
                        for (index, (rowBytes, rows)) in layout.enumerated() {
                            var plane = [UInt8](repeating: 0, count: rowBytes * rows)
                            for row in 0..<rows {
                                let start = row * info.strides[index]
                                for column in 0..<rowBytes { plane[row * rowBytes + column] = buffers[index][start + column] }
                            }
                            planes.append(plane)
                        }
                    }
                    return RingPicture(info: info, planes: planes, rowBytes: layout.map(\.0))
                }
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    func stop() -> CommandResult {
        endpoint.requestStop()
        let result = helper.finish()
        endpoint.stop()
        return result
    }
}

/// `livepush-capture --source pipewire` against the test environment's real PipeWire daemon and a
/// real producer (tools/testclients/pw-video-source.c) whose pixels and metadata the test sets.
/// Serialized: one producer and one helper at a time on the shared daemon.
@Suite(.serialized, .enabled(if: TestEnvironment.isEnabled(.pipewire), "needs the test PipeWire daemon (make test)"), .timeLimit(.minutes(10)))
struct PipeWireCaptureTests {
    @Test func solidColourArrivesExactlyAtTheProducersSize() throws {
        let source = try PipeWireVideoSource(["--size", "320x240", "--color", "00ff80"])
        defer { source.stop() }
        let session = try PipeWireHelperSession(["--source", "pipewire", "--target", source.name, "--no-cursor"])
        let picture = try #require(session.picture(), "no frame arrived: \(session.helper.errorSoFar)")
        #expect(picture.info.width == 320 && picture.info.height == 240)
        #expect(picture.info.format == .bgrx)
        #expect(picture.info.flags.contains(.formatChanged))
        var wrong = 0
        for y in 0..<240 { for x in 0..<320 where picture.rgb(x, y) != [0x00, 0xFF, 0x80] { wrong += 1 } }
        #expect(wrong == 0, "\(wrong) pixels are not 00ff80")
        let started = try #require(session.recorder.wait { $0.isStarted })
        if case .started(let info) = started {
            #expect(info == "{\"source\":\"pipewire\",\"node\":\(source.nodeID),\"window\":\"\(source.name)\"}")
        }
        let stopped = session.stop()
        #expect(stopped.exitCode == 0, "\(stopped)")
    }

    /// Bars of known colours in each of the six formats, found by node id; YUV checked in BT.709 limited range.
    @Test(arguments: ["BGRx", "BGRA", "RGBx", "RGBA", "NV12", "I420"])
    func barsArriveInEveryNegotiableFormat(format: String) throws {
        let source = try PipeWireVideoSource(["--size", "320x240", "--format", format, "--bars"])
        defer { source.stop() }
        let session = try PipeWireHelperSession(["--source", "pipewire", "--node", String(source.nodeID), "--no-cursor"])
        let picture = try #require(session.picture(), "no frame arrived: \(session.helper.errorSoFar)")
        #expect(picture.info.format.description.uppercased() == format.uppercased())
        #expect(picture.info.width == 320 && picture.info.height == 240)
        let bars: [[UInt8]] = [[255, 255, 255], [255, 255, 0], [0, 255, 255], [0, 255, 0], [255, 0, 255],
                               [255, 0, 0], [0, 0, 255], [0, 0, 0]]
        for (index, rgb) in bars.enumerated() {
            let x = index * 40 + 20
            if picture.info.format == .nv12 || picture.info.format == .i420 {
                let (r, g, b) = (Double(rgb[0]), Double(rgb[1]), Double(rgb[2]))
                let expected = [16.5 + 0.1826 * r + 0.6142 * g + 0.0620 * b,
                                128.5 - 0.1006 * r - 0.3386 * g + 0.4392 * b,
                                128.5 + 0.4392 * r - 0.3989 * g - 0.0403 * b].map { Int($0) }
                let got = picture.yuv(x, 120).map(Int.init)
                #expect(zip(got, expected).allSatisfy { abs($0 - $1) <= 1 }, "bar \(index): YUV \(got), sent \(expected)")
            } else {
                #expect(picture.rgb(x, 120) == rgb, "bar \(index) at x=\(x)")
            }
        }
        #expect(session.stop().exitCode == 0)
    }

    @Test func cursorMetadataIsCompositedByDefaultAndLeftOutWithNoCursor() throws {
        // A black picture; the producer's pointer is a 16x16 white square at (40, 30).
        let source = try PipeWireVideoSource(["--size", "160x120", "--color", "000000", "--cursor"])
        defer { source.stop() }
        source.send("cursor 40 30")
        _ = source.waitForLine(startingWith: "cursor 40 30")
        func whitePixels(_ extra: [String]) throws -> (Int, FrameFlags, [UInt8]) {
            let session = try PipeWireHelperSession(["--source", "pipewire", "--target", source.name] + extra)
            defer { _ = session.stop() }
            let picture = try #require(session.picture(), "no frame: \(session.helper.errorSoFar)")
            var white = 0
            for y in 0..<120 { for x in 0..<160 where picture.rgb(x, y) == [255, 255, 255] { white += 1 } }
            return (white, picture.info.flags, picture.rgb(47, 37))
        }
        let (withCursor, flagsWith, centre) = try whitePixels([])
        #expect(withCursor == 256, "the 16x16 pointer should be drawn, \(withCursor) white pixels")
        #expect(centre == [255, 255, 255])
        #expect(flagsWith.contains(.cursor))
        let (withoutCursor, flagsWithout, _) = try whitePixels(["--no-cursor"])
        #expect(withoutCursor == 0)
        #expect(!flagsWithout.contains(.cursor))
    }

    @Test func sizeChangesAreFollowedAndGrowingPastTheRingReconnects() throws {
        let source = try PipeWireVideoSource(["--size", "320x240", "--color", "ff0000"])
        defer { source.stop() }
        let session = try PipeWireHelperSession(["--source", "pipewire", "--target", source.name, "--no-cursor"])
        let first = try #require(session.picture())
        #expect(first.info.width == 320 && first.info.height == 240)

        source.send("resize 200 100")
        _ = source.waitForLine(startingWith: "format BGRx 200x100")
        let smaller = try #require(session.picture(after: first.info.sequence) { $0.width == 200 })
        #expect(smaller.info.height == 100 && smaller.info.flags.contains(.formatChanged))
        #expect(smaller.rgb(199, 99) == [255, 0, 0])

        // Larger than the 320x240 the session asked for: FINISH {RESTARTING}, a new HELLO, frames at 640x480.
        source.send("resize 640 480")
        let restarting = session.recorder.wait { $0.finished?.0 == FinishReason.restarting.rawValue }
        #expect(restarting != nil, "no FINISH {RESTARTING}: \(session.helper.errorSoFar)")
        let larger = try #require(session.picture(timeoutSeconds: 8) { $0.width == 640 }, "\(session.helper.errorSoFar) \(session.recorder.all)")
        #expect(larger.info.height == 480 && larger.rgb(639, 479) == [255, 0, 0])
        #expect(session.stop().exitCode == 0)
    }

    @Test func framesLargerThanThePushersLimitAreCroppedNotRestarted() throws {
        let source = try PipeWireVideoSource(["--size", "320x240", "--bars"])
        defer { source.stop() }
        let session = try PipeWireHelperSession(["--source", "pipewire", "--target", source.name, "--no-cursor"],
                                                maxSize: (160, 120))
        let first = try #require(session.picture(), "no frame: \(session.helper.errorSoFar)")
        #expect(first.info.width == 160 && first.info.height == 120)
        // The top-left quarter: the first four 40-pixel bars (white, yellow, cyan, green).
        #expect(first.rgb(20, 60) == [255, 255, 255] && first.rgb(60, 60) == [255, 255, 0])
        #expect(first.rgb(100, 60) == [0, 255, 255] && first.rgb(140, 119) == [0, 255, 0])
        // The producer cannot scale: the stream survives the new offer and frames keep coming, cropped.
        let later = try #require(session.picture(after: first.info.sequence + 10, timeoutSeconds: 5))
        #expect(later.info.width == 160 && later.rgb(140, 60) == [0, 255, 0])
        #expect(!session.recorder.all.contains { $0.finished != nil }, "no FINISH {RESTARTING} for the pusher's limit")
        let result = session.stop()
        #expect(result.exitCode == 0)
        #expect(result.standardError.contains("the pusher takes at most 160x120; frames of 320x240 are cropped"))
    }

    @Test func producerStoppingFinishesWithSourceClosed() throws {
        let source = try PipeWireVideoSource(["--size", "160x120", "--color", "ffffff"])
        let session = try PipeWireHelperSession(["--source", "pipewire", "--target", source.name])
        _ = try #require(session.picture())
        source.stop()
        let finished = try #require(session.recorder.wait { $0.finished != nil }?.finished)
        #expect(finished.0 == FinishReason.sourceClosed.rawValue)
        #expect(finished.1 == "the PipeWire node \(source.nodeID) '\(source.name)' went away")
        let result = session.helper.finish()
        #expect(result.exitCode == 0)
        session.endpoint.stop()
    }

    @Test func corruptedFramesAreDropped() throws {
        let source = try PipeWireVideoSource(["--size", "160x120", "--color", "0000ff"])
        defer { source.stop() }
        let session = try PipeWireHelperSession(["--source", "pipewire", "--target", source.name, "--no-cursor",
                                                 "--stats"])
        let first = try #require(session.picture())
        // The next 15 frames are magenta and flagged SPA_CHUNK_FLAG_CORRUPTED: none may arrive.
        var magenta = 0
        source.send("corrupt 15")
        _ = source.waitForLine(startingWith: "corrupt 15")
        var last = first.info.sequence
        let deadline = Date().addingTimeInterval(1.5)
        while Date() < deadline {
            if let picture = session.picture(after: last, timeoutSeconds: 0.5) {
                if picture.rgb(80, 60) == [255, 0, 255] { magenta += 1 }
                last = picture.info.sequence
            }
        }
        #expect(magenta == 0, "\(magenta) corrupted frames were passed on")
        let after = try #require(session.picture(after: last))
        #expect(after.rgb(80, 60) == [0, 0, 255], "blue frames go on after the corrupted ones")
        let result = session.stop()
        #expect(result.exitCode == 0)
        #expect(result.standardError.contains(" corrupted=15 "), "\(result.standardError)")
    }

    @Test func damageMetadataWithNothingChangedIsSentAsUnchanged() throws {
        let source = try PipeWireVideoSource(["--size", "160x120", "--color", "00ff00", "--damage"])
        defer { source.stop() }
        let session = try PipeWireHelperSession(["--source", "pipewire", "--target", source.name, "--no-cursor"])
        let initial = try #require(session.picture())
        // The producer marks damage on one buffer per new picture. Its first one can pass while the
        // helper's stream is still paused (PipeWire drops it; under load it did, and the test never
        // saw an unchanged frame): until the helper has seen damage it cannot tell a producer that
        // leaves the damage empty from one that says "nothing changed", so it copies every buffer.
        // The same colour again is a damaged buffer the streaming helper sees; then still buffers
        // are unchanged frames.
        source.send("color 00ff00")
        _ = source.waitForLine(startingWith: "color ")
        let first = try #require(session.picture(after: initial.info.sequence))
        let unchanged = session.recorder.wait(timeoutSeconds: 5) {
            if case .unchangedFrame = $0 { return true } else { return false }
        }
        let helperMessages = session.helper.errorSoFar
        #expect(unchanged != nil, "a still picture with empty damage should be sent as unchanged frames; helper: \(helperMessages)")
        // A change (damage) is a full frame again.
        source.send("color ff00ff")
        let changed = try #require(session.picture(after: first.info.sequence) { _ in true })
        let recoloured = changed.rgb(80, 60) == [255, 0, 255] ? changed
            : try #require(session.picture(after: changed.info.sequence))
        #expect(recoloured.rgb(80, 60) == [255, 0, 255])
        #expect(session.stop().exitCode == 0)
    }

    @Test func unknownNodeListsTheVideoNodes() throws {
        let source = try PipeWireVideoSource(["--size", "64x64"])
        defer { source.stop() }
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), [
            "--group", "nobody", "--source", "pipewire", "--target", "no-such-node",
        ], environment: try PipeWireVideoSource.environment())
        #expect(result.exitCode == 78, "EX_CONFIG: \(result)")
        #expect(result.standardError.hasPrefix("livepush-capture: no PipeWire node 'no-such-node'; the video nodes are: "))
        #expect(result.standardError.contains("\(source.nodeID) '\(source.name)' Video/Source (LivePush test video source)"))
    }

    @Test func audioNodeIsRefusedAsNotVideo() throws {
        let microphone = try TestEnvironment.microphone()
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), [
            "--group", "nobody", "--source", "pipewire", "--target", microphone,
        ], environment: try PipeWireVideoSource.environment())
        #expect(result.exitCode == 78, "EX_CONFIG: \(result)")
        #expect(result.standardError.contains("is not a video node (media.class 'Audio/Source')"), "\(result)")
    }

    @Test func noDaemonSaysWhereItLooked() throws {
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), [
            "--group", "nobody", "--source", "pipewire", "--node", "42",
        ], environment: ["PIPEWIRE_REMOTE": "/tmp/livepush-no-pipewire-here"])
        #expect(result.exitCode == 78, "EX_CONFIG: \(result)")
        #expect(result.standardError == "livepush-capture: no PipeWire daemon at /tmp/livepush-no-pipewire-here "
            + "(no socket there); start pipewire and wireplumber, or set XDG_RUNTIME_DIR (or PIPEWIRE_REMOTE) to where they run\n")
    }

    @Test func failedNegotiationNamesTheOfferedFormats() throws {
        let source = try PipeWireVideoSource(["--size", "64x64", "--format", "YUY2"])
        defer { source.stop() }
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), [
            "--group", "nobody", "--source", "pipewire", "--target", source.name,
        ], environment: try PipeWireVideoSource.environment(), timeoutSeconds: 20)
        #expect(result.exitCode == 78, "EX_CONFIG: \(result)")
        #expect(result.standardError.contains("format negotiation with PipeWire node \(source.nodeID) '\(source.name)' failed"),
                "\(result)")
        #expect(result.standardError.contains("it offers YUY2;"), "\(result)")
    }

    @Test func listShowsTheVideoNodesOnly() throws {
        let source = try PipeWireVideoSource(["--size", "64x64"])
        defer { source.stop() }
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), ["--list", "--source", "pipewire"],
                                           environment: try PipeWireVideoSource.environment())
        #expect(result.exitCode == 0)
        #expect(result.standardOutput.hasPrefix("PipeWire video nodes (--node ID or --target NAME):\n"))
        #expect(result.standardOutput.contains("  \(source.nodeID) '\(source.name)' Video/Source"))
        #expect(!result.standardOutput.contains(try TestEnvironment.microphone()))
    }

    @Test func x11OptionsAreRefusedWithAPipeWireSource() throws {
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), [
            "--group", "g", "--source", "pipewire", "--node", "3", "--region", "0,0,10,10",
        ])
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("--region is for X11 capture; it cannot be used with --source pipewire"))
        let missing = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), ["--group", "g", "--source", "pipewire"])
        #expect(missing.exitCode == 2)
        #expect(missing.standardError.contains("--node ID or --target NAME"))
    }

    /// `livepush screen --source pipewire`: the pusher starts the helper itself; ffprobe and ffmpeg read the file.
    @Test func livepushScreenRecordsAPipeWireSource() throws {
        let source = try PipeWireVideoSource(["--size", "320x240", "--bars", "--fps", "30"])
        defer { source.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("pw")).path + ".mp4"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try ProcessRunner.run(BuiltProducts.path("livepush"), [
            "screen", path, "--source", "pipewire", "--node", String(source.nodeID), "--no-cursor",
            "--resolution", "320x240", "--fps", "30", "--duration", "3", "--quiet",
        ], environment: try PipeWireVideoSource.environment(), timeoutSeconds: 40)
        #expect(result.exitCode == 0, "\(result)")
        let stream = try MediaProbe.videoStream(path)
        #expect(stream["codec_name"] == "h264" && stream["width"] == "320" && stream["height"] == "240")
        let frames = Int(stream["nb_read_frames"] ?? "") ?? 0
        #expect((60...95).contains(frames), "3 s at 30 fps, got \(frames) frames")
        let rgb = try MediaProbe.decodedRGB(path, frame: max(0, frames - 10))
        let expected: [(Int, [Int])] = [(20, [255, 255, 255]), (60, [255, 255, 0]), (100, [0, 255, 255]),
                                         (140, [0, 255, 0]), (180, [255, 0, 255]), (220, [255, 0, 0]),
                                         (260, [0, 0, 255]), (300, [0, 0, 0])]
        for (x, colour) in expected {
            let offset = (120 * 320 + x) * 3
            let pixel = rgb.count >= offset + 3 ? rgb[offset..<offset + 3].map(Int.init) : []
            #expect(pixel.count == 3 && zip(pixel, colour).allSatisfy { abs($0 - $1) <= 16 },
                    "bar at x=\(x): decoded \(pixel), produced \(colour)")
        }
    }
}

/// `livepush-capture --source portal` against a mock ScreenCast portal on the test environment's
/// private session bus (no desktop portal runs here); the stream itself is real PipeWire.
/// Serialized: the portal's bus name can have one owner at a time.
@Suite(.serialized, .enabled(if: TestEnvironment.isEnabled(.pipewire), "needs the test PipeWire and D-Bus (make test)"), .timeLimit(.minutes(10)))
struct PortalCaptureTests {
    private func stateDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("state")).path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func portalFlowCapturesTheGrantedNodeAndReplacesTheRestoreToken() throws {
        let source = try PipeWireVideoSource(["--size", "256x128", "--color", "ffff00"])
        defer { source.stop() }
        let portal = try MockScreenCastPortal(nodeID: source.nodeID, tokenPrefix: "granted")
        defer { portal.stop() }
        let state = stateDirectory()
        let tokenFile = state + "/livepush/screencast-restore-token"

        let session = try PipeWireHelperSession(["--source", "portal", "--no-cursor"],
                                                extraEnvironment: ["XDG_STATE_HOME": state, "PIPEWIRE_REMOTE": ""])
        let picture = try #require(session.picture(), "no frame: \(session.helper.errorSoFar)")
        #expect(picture.info.width == 256 && picture.info.height == 128 && picture.rgb(128, 64) == [255, 255, 0])
        #expect(session.stop().exitCode == 0)
        #expect(portal.calls.map(\.method) == ["CreateSession", "SelectSources", "Start", "OpenPipeWireRemote",
                                              "Session.Close"])
        let select = try #require(portal.calls.first { $0.method == "SelectSources" }?.options)
        #expect(select["types"] as? Int == 1 && select["persist_mode"] as? Int == 2)
        #expect(select["cursor_mode"] as? Int == 1, "--no-cursor asks for a hidden pointer")
        #expect(select["restore_token"] == nil)
        #expect(try String(contentsOfFile: tokenFile, encoding: .utf8) == "granted-1\n")

        // The second run hands the saved token back, and keeps the new one.
        let again = try PipeWireHelperSession(["--source", "portal", "--portal-source", "any"],
                                              extraEnvironment: ["XDG_STATE_HOME": state])
        _ = try #require(again.picture(), "no frame: \(again.helper.errorSoFar)")
        #expect(again.stop().exitCode == 0)
        let selects = portal.calls.filter { $0.method == "SelectSources" }.map(\.options)
        #expect(selects.count == 2)
        #expect(selects.last?["restore_token"] as? String == "granted-1")
        #expect(selects.last?["types"] as? Int == 3 && selects.last?["cursor_mode"] as? Int == 4)
        #expect(try String(contentsOfFile: tokenFile, encoding: .utf8) == "granted-2\n")
        let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func cancelledDialogSaysSoAndKeepsTheToken() throws {
        let portal = try MockScreenCastPortal(nodeID: 1, startResponse: 1)
        defer { portal.stop() }
        let state = stateDirectory()
        try FileManager.default.createDirectory(atPath: state + "/livepush", withIntermediateDirectories: true)
        try "kept-token\n".write(toFile: state + "/livepush/screencast-restore-token", atomically: true, encoding: .utf8)
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), ["--group", "g", "--source", "portal"],
                                           environment: ["XDG_STATE_HOME": state])
        #expect(result.exitCode == 1)
        #expect(result.standardError == "livepush-capture: screen sharing was cancelled in the desktop's dialog "
            + "(portal Start answered 1); run again and choose what to share\n")
        #expect(portal.calls.map(\.method) == ["CreateSession", "SelectSources", "Start"])
        #expect(portal.calls[1].options["restore_token"] as? String == "kept-token")
        #expect(try String(contentsOfFile: state + "/livepush/screencast-restore-token", encoding: .utf8) == "kept-token\n")
    }

    @Test func portalEndingTheRequestIsReported() throws {
        let portal = try MockScreenCastPortal(nodeID: 1, startResponse: 2)
        defer { portal.stop() }
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"),
                                           ["--group", "g", "--source", "portal", "--no-restore"],
                                           environment: ["XDG_STATE_HOME": stateDirectory()])
        #expect(result.exitCode == 1)
        #expect(result.standardError.contains("the ScreenCast portal ended the request (Start answered 2)"))
    }

    @Test func missingPortalIsNamedWithWhatToInstall() throws {
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), ["--group", "g", "--source", "portal"],
                                           environment: ["XDG_STATE_HOME": stateDirectory()])
        #expect(result.exitCode == 1)
        #expect(result.standardError.hasPrefix("livepush-capture: no ScreenCast portal on the session bus "
            + "(org.freedesktop.DBus.Error.ServiceUnknown"), "\(result)")
        #expect(result.standardError.contains("install xdg-desktop-portal"))
    }
}
