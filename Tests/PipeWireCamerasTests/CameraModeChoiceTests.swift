import Testing
@testable import PipeWireCameras

/// How livepush-capture picks a camera's mode from what the camera offers: the size nearest the one
/// asked for first, then the frame rate nearest, then the cheapest format; what a webcam offers is
/// modelled on a real one (YUY2 slow at large sizes, MJPEG fast).
@Suite struct CameraModeChoiceTests {
    static func rates(_ fps: Int...) -> CameraFrameRates { .list(fps.map { CameraFrameRate(fps: $0) }) }

    /// A typical USB webcam: YUY2 up to 1280x720 at 10 fps, MJPEG up to 1920x1080 at 30 fps.
    static let webcam: [VideoFormatOffer] = [
        VideoFormatOffer(formatName: "YUY2", cameraFormat: .yuy2, isRaw: true, sizes: .fixed(width: 640, height: 480),
                         frameRates: rates(30, 15)),
        VideoFormatOffer(formatName: "YUY2", cameraFormat: .yuy2, isRaw: true, sizes: .fixed(width: 1280, height: 720),
                         frameRates: rates(10, 5)),
        VideoFormatOffer(formatName: "MJPEG", cameraFormat: .mjpeg, isRaw: false,
                         sizes: .fixed(width: 1280, height: 720), frameRates: rates(30, 15)),
        VideoFormatOffer(formatName: "MJPEG", cameraFormat: .mjpeg, isRaw: false,
                         sizes: .fixed(width: 1920, height: 1080), frameRates: rates(30)),
        VideoFormatOffer(formatName: "MJPEG", cameraFormat: .mjpeg, isRaw: false, sizes: .fixed(width: 640, height: 480),
                         frameRates: rates(30)),
        VideoFormatOffer(formatName: "H264", cameraFormat: nil, isRaw: false, sizes: .fixed(width: 1920, height: 1080),
                         frameRates: rates(30)),
    ]

    @Test func theDefaultIs720pAt30FramesInMJPEGWhenYUY2IsTooSlowThere() {
        let mode = CameraModeChoice.choose(Self.webcam, CameraModeRequest())
        #expect(mode == CameraMode(format: .mjpeg, width: 1280, height: 720, frameRate: CameraFrameRate(fps: 30)))
    }

    @Test func anExactSizeAndRateInBothFormatsTakesTheRawOne() {
        let mode = CameraModeChoice.choose(Self.webcam, CameraModeRequest(width: 640, height: 480, fps: 30))
        #expect(mode == CameraMode(format: .yuy2, width: 640, height: 480, frameRate: CameraFrameRate(fps: 30)))
    }

    @Test func theSizeComesBeforeTheRate() {
        // 1280x720 at 10 fps (YUY2) or 30 (MJPEG): asked 1280x720 at 10, YUY2 gives exactly that.
        let mode = CameraModeChoice.choose(Self.webcam, CameraModeRequest(width: 1280, height: 720, fps: 10))
        #expect(mode == CameraMode(format: .yuy2, width: 1280, height: 720, frameRate: CameraFrameRate(fps: 10)))
        // A size it does not have: the nearest (1920x1080 is 420+260 away from 1500x820, 1280x720 220+100).
        let near = CameraModeChoice.choose(Self.webcam, CameraModeRequest(width: 1500, height: 820, fps: 30))
        #expect(near == CameraMode(format: .mjpeg, width: 1280, height: 720, frameRate: CameraFrameRate(fps: 30)))
    }

    @Test func aForcedFormatKeepsToIt() {
        let mode = CameraModeChoice.choose(Self.webcam, CameraModeRequest(width: 1280, height: 720, fps: 30, format: .yuy2))
        #expect(mode == CameraMode(format: .yuy2, width: 1280, height: 720, frameRate: CameraFrameRate(fps: 10)))
        #expect(CameraModeChoice.choose(Self.webcam, CameraModeRequest(format: .nv12)) == nil)
    }

    @Test func aRateBetweenTwoTakesTheNearestAndOnATieTheHigher() {
        let mode = CameraModeChoice.choose(Self.webcam, CameraModeRequest(width: 1280, height: 720, fps: 20))
        #expect(mode?.frameRate == CameraFrameRate(fps: 15))
        let tie = CameraModeChoice.choose(Self.webcam, CameraModeRequest(width: 1280, height: 720, fps: 22.5))
        #expect(tie?.frameRate == CameraFrameRate(fps: 30))
    }

    @Test func rangesOfSizesAndRatesGiveWhatWasAskedWithinThem() {
        let offers = [VideoFormatOffer(
            formatName: "NV12", cameraFormat: .nv12, isRaw: true,
            sizes: .range(minWidth: 160, minHeight: 120, maxWidth: 1920, maxHeight: 1080, stepWidth: 16, stepHeight: 8),
            frameRates: .range(min: CameraFrameRate(fps: 1), max: CameraFrameRate(fps: 60)))]
        let mode = CameraModeChoice.choose(offers, CameraModeRequest(width: 1000, height: 562, fps: 24))
        #expect(mode == CameraMode(format: .nv12, width: 1008, height: 560, frameRate: CameraFrameRate(fps: 24)))
        let big = CameraModeChoice.choose(offers, CameraModeRequest(width: 4000, height: 3000, fps: 120))
        #expect(big == CameraMode(format: .nv12, width: 1920, height: 1080, frameRate: CameraFrameRate(fps: 60)))
    }

    @Test func onlyFormatsItTakesCount() {
        let h264Only = Self.webcam.filter { $0.cameraFormat == nil }
        #expect(CameraModeChoice.choose(h264Only, CameraModeRequest()) == nil)
    }

    @Test func theLogLineSaysWhatWasChosenAgainstWhatWasAsked() {
        let request = CameraModeRequest(width: 1500, height: 820, fps: 25)
        let mode = CameraModeChoice.choose(Self.webcam, request)!
        #expect(CameraModeChoice.describe(mode, request)
            == "camera mode MJPEG 1280x720 at 30 fps (the nearest it offers to 1500x820 at 25 fps)")
        let exact = CameraModeRequest(width: 1280, height: 720, fps: 30)
        #expect(CameraModeChoice.describe(CameraModeChoice.choose(Self.webcam, exact)!, exact)
            == "camera mode MJPEG 1280x720 at 30 fps (as asked)")
    }

    @Test func frameRatesPrintAsPeopleWriteThem() {
        #expect(CameraFrameRate(fps: 30).description == "30")
        #expect(CameraFrameRate(numerator: 15, denominator: 2).description == "7.5")
        #expect(CameraFrameRate(numerator: 30000, denominator: 1001).description == "29.97")
    }
}
