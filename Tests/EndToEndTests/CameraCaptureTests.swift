import Foundation
import Testing
import TestSupport

/// `--source camera` against the test environment's real PipeWire daemon and a camera-like producer
/// (tools/testclients/pw-camera-source.c: the Camera role; YUY2, MJPEG, NV12 and I420 modes; colour
/// bars or a colour, a moving column), measured in what nginx and the recordings received.
/// Serialized: one camera at a time on the shared daemon keeps "the first camera" unambiguous.
@Suite(.serialized, .enabled(if: TestEnvironment.isEnabled(.pipewire) && TestEnvironment.isEnabled(.rtmp),
                             "needs the test PipeWire daemon and nginx (make test)"),
       .timeLimit(.minutes(10)))
struct CameraCaptureTests {
    private let livepush = BuiltProducts.path("livepush")
    private let capture = BuiltProducts.path("livepush-capture")

    /// The bars of pw-camera-source, left to right.
    static let bars: [[Int]] = [[255, 255, 255], [255, 255, 0], [0, 255, 255], [0, 255, 0], [255, 0, 255],
                                [255, 0, 0], [0, 0, 255], [0, 0, 0]]

    private func camera(_ arguments: [String]) throws -> PipeWireVideoSource {
        try PipeWireVideoSource(arguments, program: .camera)
    }

    private func temporaryPath(_ name: String, _ suffix: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(name)).path + suffix
    }

    /// Frame `frame` of `path` (`outputWidth` x `outputHeight`) holds the eight bars over
    /// `left..<left + width` (the camera's picture fitted into the output) and black beside them.
    static func checkBars(_ path: String, frame: Int, outputWidth: Int = 1280, outputHeight: Int = 720, left: Int,
                          width: Int, what: String) throws
    {
        let rgb = try MediaProbe.decodedRGB(path, frame: frame)
        try #require(rgb.count == outputWidth * outputHeight * 3,
                     "\(what): frame \(frame) is not \(outputWidth)x\(outputHeight) (\(rgb.count) bytes)")
        let row = outputHeight / 2 * outputWidth
        func pixel(_ x: Int) -> [Int] { rgb[(row + x) * 3..<(row + x) * 3 + 3].map(Int.init) }
        for (index, colour) in bars.enumerated() {
            let x = left + width * (2 * index + 1) / 16
            #expect(zip(pixel(x), colour).allSatisfy { abs($0 - $1) <= 16 },
                    "\(what): bar \(index) at x=\(x) decoded \(pixel(x)), the camera sends \(colour)")
        }
        if left > 0 {
            let outside = [pixel(left / 2), pixel(outputWidth - 1 - left / 2)]
            #expect(outside.allSatisfy { $0.allSatisfy { $0 <= 16 } },
                    "\(what): black beside a 4:3 picture fitted into 16:9: \(outside)")
            #expect(pixel(left + 4).reduce(0, +) > 600, "\(what): the picture starts at x=\(left) (white bar)")
        }
    }

    /// Each format a webcam sends, at its size, pushed to nginx and recorded: the bars' colours and
    /// the picture's shape (a 640x480 camera fitted into 1280x720 is 960 wide) in both.
    @Test(arguments: ["yuy2:640x480", "mjpeg:1280x720", "nv12:640x480", "i420:640x480"])
    func barsArriveAtNginxAndInTheRecordingWithTheirColoursAndSize(mode: String) throws {
        let parts = mode.split(separator: ":")
        let format = String(parts[0]), size = String(parts[1])
        let source = try camera(["--bars"])
        defer { source.stop() }
        let key = UniqueName.make("camera")
        let path = temporaryPath("camera", ".mkv")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try ProcessRunner.run(livepush, [
            "screen", path, try TestEnvironment.recordURL(key: key), "--source", "camera", "--camera", source.name,
            "--camera-format", format, "--size", size, "--resolution", "1280x720", "--fps", "30", "--no-mic",
            "--duration", "3", "--quiet",
        ], environment: try PipeWireVideoSource.environment(), timeoutSeconds: 60)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.standardError.contains("capture: capturing camera \(source.nodeID) '\(source.name)' "
            + "(LivePush test camera): \(format.uppercased()) \(size) at 30 fps"), "\(result.standardError)")
        let (left, width) = size == "640x480" ? (160, 960) : (0, 1280)
        let received = try TestEnvironment.closedRecording(key: key)
        for (file, what) in [(received, "nginx"), (path, "recording")] {
            let frames = try MediaProbe.decodedFrameCount(file)
            #expect(frames >= 40, "\(what): \(frames) frames of a 3 s stream")
            #expect(try MediaProbe.decodeErrors(file).isEmpty, "\(what) decodes without an error")
            try Self.checkBars(file, frame: frames - 10, left: left, width: width, what: "\(what), \(format)")
        }
    }

    /// Many webcams leave the standard Huffman tables out of their MJPEG frames: decoded all the same.
    @Test func mjpegFramesWithoutHuffmanTablesAsWebcamsSendThemAreDecoded() throws {
        let source = try camera(["--bars", "--no-huffman-tables"])
        defer { source.stop() }
        let path = temporaryPath("camera-dht", ".mkv")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try ProcessRunner.run(livepush, [
            "screen", path, "--source", "camera", "--camera", source.name, "--camera-format", "mjpeg", "--size",
            "1280x720", "--resolution", "1280x720", "--no-mic", "--duration", "2", "--quiet",
        ], environment: try PipeWireVideoSource.environment(), timeoutSeconds: 60)
        #expect(result.exitCode == 0, "\(result)")
        let frames = try MediaProbe.decodedFrameCount(path)
        #expect(frames >= 20, "\(frames) frames of a 2 s recording")
        try Self.checkBars(path, frame: frames - 5, left: 0, width: 1280, what: "MJPEG without DHT")
    }

    /// The mode asked for by --size and --fps, or the nearest: seen at the receiver by the picture's
    /// shape (16:9 fills the output, 4:3 has black beside it) and by how many different pictures a
    /// second the moving column makes (the camera's rate, under the output's 30), on a busy machine.
    @Test func theModeFollowsSizeAndRateAndTheNearestIsTakenWhenNotOffered() throws {
        let hog = try CPUHog(count: 2)
        defer { hog.stop() }
        let source = try camera(["--color", "000080", "--moving",
                                 "--modes", "YUY2:640x480@30/15,YUY2:1280x720@10/5,MJPEG:1280x720@30/15,MJPEG:640x480@30"])
        defer { source.stop() }
        for (size, fps, expected, fitted, rates) in [
            ("1280x720", "10", "camera mode YUY2 1280x720 at 10 fps (as asked)", false, 6.0...13.0),
            ("700x500", "30", "camera mode YUY2 640x480 at 30 fps (the nearest it offers to 700x500 at 30 fps)", true,
             18.0...33.0),
        ] {
            let key = UniqueName.make("camera-mode")
            let group = UniqueName.make("cam")
            let pusher = try ProcessRunner.start(livepush, [
                "record", "--group", group, try TestEnvironment.recordURL(key: key), temporaryPath("mode", ".mkv"),
                "--resolution", "1280x720", "--fps", "30", "--no-mic", "--duration", "5", "--quiet",
            ])
            let helper = try ProcessRunner.start(capture, [
                "--group", group, "--source", "camera", "--camera", source.name, "--size", size, "--fps", fps,
            ], environment: try PipeWireVideoSource.environment())
            let recorded = pusher.finish()
            let helped = helper.finish()
            #expect(recorded.exitCode == 0, "\(recorded)")
            #expect(helped.standardError.contains("livepush-capture: \(expected)\n"), "\(helped)")
            let file = try TestEnvironment.closedRecording(key: key)
            let pictures = try ReceivedPictures.decode(file, width: 256)
            // The last 3 s: how many pictures differ from the one before (the column moves every camera frame).
            let endMs = try #require(pictures.timesMs.last)
            let recent = (1..<pictures.count).filter { pictures.timesMs[$0] > endMs - 3000 }
            let changes = recent.filter { pictures.bright($0, luma: 200).centreX != pictures.bright($0 - 1, luma: 200).centreX }
            let perSecond = Double(changes.count) / 3
            #expect(rates.contains(perSecond), "--size \(size) --fps \(fps): \(perSecond) new pictures a second")
            let rgb = try MediaProbe.decodedRGB(file, frame: try MediaProbe.decodedFrameCount(file) - 5)
            let edge = rgb[(360 * 1280 + 40) * 3 + 2]  // blue channel at x=40: the camera's dark blue, or black
            #expect(fitted ? edge <= 16 : edge >= 100, "--size \(size): blue \(edge) at x=40 (fitted: \(fitted))")
        }
    }

    /// The camera goes away mid-stream (its producer killed, as a webcam pulled out): the pusher shows
    /// its pause picture, the broadcast goes on at its rate, and the camera that comes back (green now)
    /// is shown again, without the helper being restarted; on a machine kept busy by two loops.
    @Test func aCameraThatGoesAwayGivesThePausePictureAndTheBroadcastGoesOn() throws {
        let hog = try CPUHog(count: 2)
        defer { hog.stop() }
        let name = UniqueName.make("lp-camera")
        var source = try PipeWireVideoSource(name: name, ["--bars"], program: .camera)
        let key = UniqueName.make("camera-loss")
        let run = try ProcessRunner.start(livepush, [
            "screen", try TestEnvironment.recordURL(key: key), "--source", "camera", "--camera", name, "--size",
            "640x480", "--resolution", "640x480", "--fps", "30", "--no-mic", "--duration", "16", "--quiet",
        ], environment: try PipeWireVideoSource.environment())
        #expect(try waitUntil(timeoutSeconds: 20) { run.errorSoFar.contains("capture: capturing camera") },
                "the camera never started: \(run.errorSoFar)")
        Thread.sleep(forTimeInterval: 3)  // let it run: 3 s of bars
        source.kill()
        #expect(try waitUntil(timeoutSeconds: 10) { run.errorSoFar.contains("went away") }, "\(run.errorSoFar)")
        Thread.sleep(forTimeInterval: 4)  // let it run: 4 s without a camera
        source = try PipeWireVideoSource(name: name, ["--color", "00ff00"], program: .camera)
        defer { source.stop() }
        #expect(try waitUntil(timeoutSeconds: 10) { run.errorSoFar.contains("is back") }, "\(run.errorSoFar)")
        let result = run.finish()
        #expect(result.exitCode == 0, "\(result)")
        #expect(!result.standardError.contains("restarting"), "the helper waits for its camera: \(result.standardError)")

        let file = try TestEnvironment.closedRecording(key: key)
        let pictures = try ReceivedPictures.decode(file, width: 160)
        let notice = PlaceholderNotice().shown(in: pictures)
        // Green is uniform (luma 145 in BT.601 limited range); the bars are not.
        func isGreen(_ index: Int) -> Bool { pictures.share(index, rows: 0..<pictures.height) { (130...160).contains($0) } > 0.95 }
        let firstNotice = try #require(notice.firstIndex(of: true), "no pause picture at the receiver")
        let lastNotice = try #require(notice.lastIndex(of: true))
        let noticeMs = pictures.timesMs[lastNotice] - pictures.timesMs[firstNotice]
        #expect(noticeMs >= 2500, "the pause picture for \(noticeMs) ms of stream time (4 s without the camera)")
        #expect((0..<firstNotice).contains { !isGreen($0) && !notice[$0] }, "the bars before the camera went away")
        let greenAfter = ((lastNotice + 1)..<pictures.count).filter(isGreen)
        #expect(greenAfter.count >= 20, "the camera that came back: \(greenAfter.count) green pictures after the pause")
        #expect(!(0..<firstNotice).contains(where: isGreen), "no green before the camera came back")
        let gaps = zip(pictures.timesMs, pictures.timesMs.dropFirst()).map { $1 - $0 }
        #expect((gaps.max() ?? 0) <= 1000, "the broadcast goes on: largest gap \(gaps.max() ?? 0) ms")
        #expect((pictures.timesMs.last ?? 0) >= 14000, "16 s pushed, \(pictures.timesMs.last ?? 0) ms received")
    }

    /// `livepush devices` and `livepush-capture --list --source camera` list the camera with its modes.
    @Test func devicesListTheCameraWithItsFormatsSizesAndRates() throws {
        let source = try camera(["--bars"])
        defer { source.stop() }
        let environment = try PipeWireVideoSource.environment()
        let devices = try ProcessRunner.run(livepush, ["devices"], environment: environment)
        #expect(devices.exitCode == 0, "\(devices)")
        let lines = devices.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let header = try #require(lines.firstIndex(of: "Cameras (--source camera --camera NAME):"), "\(devices)")
        let row = try #require(lines[header...].firstIndex { $0.hasPrefix("  \(source.name) ") }, "\(devices)")
        #expect(lines[row].hasSuffix("  LivePush test camera  (id \(source.nodeID), livepush-test:\(source.name))"))
        #expect(Array(lines[(row + 1)...(row + 4)]) == [
            "      YUY2 1280x720 10/5 fps, 640x480 30/15 fps",
            "      MJPEG 1920x1080 30 fps, 1280x720 30/15 fps, 640x480 30 fps",
            "      NV12 640x480 30 fps",
            "      I420 640x480 30 fps",
        ], "\(devices.standardOutput)")
        let names = try ProcessRunner.run(livepush, ["devices", "--camera-names"], environment: environment)
        #expect(names.standardOutput.split(separator: "\n").contains(Substring(source.name)), "\(names)")
        let list = try ProcessRunner.run(capture, ["--list", "--source", "camera"], environment: environment)
        #expect(list.exitCode == 0)
        #expect(list.standardOutput.contains("  \(source.nodeID) '\(source.name)' (LivePush test camera)  "
            + "livepush-test:\(source.name)\n      YUY2 1280x720 10/5 fps, 640x480 30/15 fps\n"), "\(list)")
    }

    @Test func anUnknownCameraOrAFormatItLacksIsAConfigurationErrorThatSaysWhatThereIs() throws {
        let source = try camera(["--modes", "YUY2:640x480@30,MJPEG:1280x720@30"])
        defer { source.stop() }
        let environment = try PipeWireVideoSource.environment()
        let unknown = try ProcessRunner.run(capture, ["--group", "nobody", "--source", "camera", "--camera", "no-such-cam"],
                                            environment: environment)
        #expect(unknown.exitCode == 78, "EX_CONFIG: \(unknown)")
        #expect(unknown.standardError.hasPrefix("livepush-capture: no camera 'no-such-cam'; the cameras are: "), "\(unknown)")
        #expect(unknown.standardError.contains("\(source.nodeID) '\(source.name)' (LivePush test camera)"))
        let format = try ProcessRunner.run(capture, ["--group", "nobody", "--source", "camera", "--camera", source.name,
                                                     "--camera-format", "nv12"], environment: environment)
        #expect(format.exitCode == 78, "EX_CONFIG: \(format)")
        #expect(format.standardError == "livepush-capture: camera \(source.nodeID) '\(source.name)' (LivePush test camera) "
            + "offers YUY2, MJPEG (not raw video), not NV12; choose another --camera-format (yuy2, mjpeg, nv12 or i420) "
            + "or leave it out\n", "\(format)")
        // A name one letter off is a typo: the camera it most likely meant is named.
        let typo = String(source.name.dropLast())
        let near = try ProcessRunner.run(capture, ["--group", "nobody", "--source", "camera", "--camera", typo],
                                         environment: environment)
        #expect(near.exitCode == 78, "EX_CONFIG: \(near)")
        #expect(near.standardError.hasPrefix("livepush-capture: no camera '\(typo)'; did you mean '\(source.name)'? "
            + "the cameras are: "), "\(near)")
    }

    /// livepush screen finds a camera that is not there, or lacks the format asked for, before anything
    /// starts: no helper, no recording, the cameras there are and the nearest name, exit 2.
    @Test func livepushNamesAMissingCameraBeforeAnythingStarts() throws {
        let source = try camera(["--modes", "YUY2:640x480@30,MJPEG:1280x720@30"])
        defer { source.stop() }
        let environment = try PipeWireVideoSource.environment()
        let path = temporaryPath("none", ".mkv")
        func screen(_ options: [String]) throws -> CommandResult {
            try ProcessRunner.run(livepush, ["screen", path, "--source", "camera", "--no-mic", "--duration", "5"] + options,
                                  environment: environment, timeoutSeconds: 30)
        }
        let typo = source.name.replacingOccurrences(of: "camera", with: "camra")
        let missing = try screen(["--camera", typo])
        #expect(missing.exitCode == 2, "\(missing)")
        #expect(missing.standardError.hasPrefix("livepush screen: no camera '\(typo)'; did you mean '\(source.name)'? "
            + "the cameras are: "), "\(missing)")
        #expect(missing.standardError.hasSuffix("\(source.nodeID) '\(source.name)' (LivePush test camera) (livepush devices "
            + "lists them)\n"), "\(missing)")
        let unknown = try screen(["--camera", "no-such-cam"])
        #expect(unknown.exitCode == 2, "\(unknown)")
        #expect(unknown.standardError.hasPrefix("livepush screen: no camera 'no-such-cam'; the cameras are: "), "\(unknown)")
        #expect(unknown.standardError.contains("\(source.nodeID) '\(source.name)' (LivePush test camera)"), "\(unknown)")
        let format = try screen(["--camera", source.name, "--camera-format", "nv12"])
        #expect(format.exitCode == 2, "\(format)")
        #expect(format.standardError == "livepush screen: camera \(source.nodeID) '\(source.name)' (LivePush test camera) "
            + "offers YUY2, MJPEG (not raw video), not NV12; choose another --camera-format (yuy2, mjpeg, nv12 or i420) "
            + "or leave it out\n", "\(format)")
        for result in [missing, unknown, format] {
            #expect(!result.standardError.contains("capture:"), "no helper was started: \(result)")
        }
        #expect(!FileManager.default.fileExists(atPath: path), "nothing was recorded")
        let badFormat = try screen(["--camera-format", "h264"])
        #expect(badFormat.exitCode == 2)
        #expect(badFormat.standardError.contains("invalid value 'h264' for '--camera-format': use yuy2, mjpeg, nv12 or i420"),
                "\(badFormat)")
    }

    @Test func cameraOptionsNeedSourceCameraAndACameraInARectangleWaitsForScenes() throws {
        let helper = try ProcessRunner.run(capture, ["--group", "g", "--size", "640x480"])
        #expect(helper.exitCode == 2)
        #expect(helper.standardError.contains("--size needs --source camera"), "\(helper)")
        let size = try ProcessRunner.run(capture, ["--group", "g", "--source", "camera", "--size", "640"])
        #expect(size.exitCode == 2)
        #expect(size.standardError.contains("use WxH with W and H from 1 to 16384, e.g. 1280x720"), "\(size)")
        let screen = try ProcessRunner.run(livepush, ["screen", "x.mkv", "--camera", "cam"])
        #expect(screen.exitCode == 2)
        #expect(screen.standardError.contains("--camera needs --source camera"), "\(screen)")
        let corner = try ProcessRunner.run(livepush, ["screen", "x.mkv", "--source", "camera", "--camera",
                                                      "cam@0.74,0.72,0.24"])
        #expect(corner.exitCode == 2)
        #expect(corner.standardError.contains("a camera in a rectangle of the picture (NODE@X,Y,W) comes with scenes"),
                "\(corner)")
    }
}
