import Testing
@testable import PipeWireCameras

/// The camera a mistyped `--camera` most likely meant, as "no camera 'X'; did you mean 'Y'?" names it.
@Suite struct CameraNameSuggestionTests {
    static let cameras = [
        CameraInfo(id: 52, name: "v4l2_input.pci-0000_00_14.0-usb-0_6_1.0", nodeDescription: "Integrated Camera (V4L2)",
                   objectPath: "v4l2:/dev/video0", offers: []),
        CameraInfo(id: 61, name: "v4l2_input.usb-046d_C920-00", nodeDescription: "HD Pro Webcam C920 (V4L2)",
                   objectPath: "v4l2:/dev/video2", offers: []),
    ]

    @Test func aPartOfOneCamerasNameDescriptionOrDeviceNamesIt() {
        #expect(CameraInfo.nearest(to: "C920", in: Self.cameras)?.id == 61)
        #expect(CameraInfo.nearest(to: "integrated", in: Self.cameras)?.id == 52)
        #expect(CameraInfo.nearest(to: "/dev/video2", in: Self.cameras)?.id == 61)
    }

    @Test func aTypoInANameOrDescriptionNamesTheNearest() {
        #expect(CameraInfo.nearest(to: "v4l2_input.usb-046d_C902-00", in: Self.cameras)?.id == 61)
        #expect(CameraInfo.nearest(to: "Integrated Camra (V4L2)", in: Self.cameras)?.id == 52)
    }

    @Test func aPartOfSeveralOrNothingNearIsNoGuess() {
        #expect(CameraInfo.nearest(to: "v4l2", in: Self.cameras) == nil)
        #expect(CameraInfo.nearest(to: "no-such-cam", in: Self.cameras) == nil)
        #expect(CameraInfo.nearest(to: "C920", in: []) == nil)
    }

    @Test func theErrorSaysWhatItGuessedAndWhatThereIs() {
        #expect(CameraError.notFound(wanted: "C920", cameras: Self.cameras).description == "no camera 'C920'; did you mean "
            + "'v4l2_input.usb-046d_C920-00'? the cameras are: 52 'v4l2_input.pci-0000_00_14.0-usb-0_6_1.0' (Integrated "
            + "Camera (V4L2)), 61 'v4l2_input.usb-046d_C920-00' (HD Pro Webcam C920 (V4L2)) (livepush devices lists them)")
        #expect(CameraError.notFound(wanted: "cam", cameras: []).description
            == "no camera 'cam'; PipeWire has no camera (livepush devices lists them)")
    }
}
