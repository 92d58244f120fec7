import ScreenCapture
import Testing

/// The size a scaling helper sends for CONFIG's maximum (LPC_CAP_SCALE): the aspect kept, never up.
@Suite(.timeLimit(.minutes(10))) struct FittedSizeTests {
    @Test func aScreenLargerThanTheMaximumFitsItWithItsAspect() {
        #expect(fittedSize(width: 1920, height: 1080, maxWidth: 1280, maxHeight: 720) == (1280, 720))
        #expect(fittedSize(width: 1920, height: 1080, maxWidth: 1280, maxHeight: 1280) == (1280, 720))
        #expect(fittedSize(width: 1920, height: 1200, maxWidth: 1280, maxHeight: 720) == (1152, 720))
        #expect(fittedSize(width: 1080, height: 1920, maxWidth: 640, maxHeight: 360) == (203, 360))
        #expect(fittedSize(width: 1366, height: 768, maxWidth: 960, maxHeight: 540) == (960, 540))
    }

    @Test func aSourceWithinTheMaximumKeepsItsSize() {
        #expect(fittedSize(width: 800, height: 600, maxWidth: 1280, maxHeight: 720) == (800, 600))
        #expect(fittedSize(width: 1280, height: 720, maxWidth: 1280, maxHeight: 720) == (1280, 720))
    }

    @Test func nothingGoesUnderOnePixel() {
        #expect(fittedSize(width: 4000, height: 10, maxWidth: 100, maxHeight: 100) == (100, 1))
        #expect(fittedSize(width: 10, height: 10, maxWidth: 0, maxHeight: 0) == (1, 1))
    }
}
