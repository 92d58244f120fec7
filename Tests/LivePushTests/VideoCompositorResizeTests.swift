@testable import LivePush
import Media
import Foundation
import Synchronization
import Testing

/// Adaptive resolution (issue 16 item 5) changes the compositor's size while watermarks are on:
/// each must be drawn where its normalized place says at the new size, and snapshots keep theirs.
@Suite(.timeLimit(.minutes(10))) struct VideoCompositorResizeTests {
    @Test func aWatermarkFollowsTheNewSizeAndCopiesAreScaledToTheirTarget() throws {
        let compositor = try VideoCompositor(width: 128, height: 72, scaleMode: .fit, images: PlaceholderImages())
        let white = WatermarkImage(width: 8, height: 8, bgra: [UInt8](repeating: 255, count: 8 * 8 * 4))
        // The right half's top: x from 0.5, 0.25 of the width wide.
        try compositor.setWatermark(id: 1, image: white, position: WatermarkPosition(x: 0.5, y: 0, width: 0.25))
        let before = compositor.compose(ptsMs: 0).frame
        #expect((before.width, before.height) == (128, 72))
        #expect(before.yuv(x: 70, y: 4).y >= 230, "the watermark at 128x72: \(before.yuv(x: 70, y: 4))")

        try compositor.resize(width: 64, height: 36)
        #expect((compositor.width, compositor.height) == (64, 36))
        let after = compositor.compose(ptsMs: 33).frame
        #expect((after.width, after.height) == (64, 36))
        #expect(after.yuv(x: 36, y: 2).y >= 230, "the watermark at 64x36, x 32 to 48: \(after.yuv(x: 36, y: 2))")
        #expect(after.yuv(x: 52, y: 2).y <= 20, "beside it, black: \(after.yuv(x: 52, y: 2))")
        #expect(after.yuv(x: 28, y: 2).y <= 20, "beside it, black: \(after.yuv(x: 28, y: 2))")

        // A snapshot target at the configured size gets the new picture scaled up to it.
        let target = try VideoFrame(width: 128, height: 72)
        target.fillBlack()
        let composing = Atomic<Bool>(true)
        let composer = Thread {  // the video thread: composes until the copy was taken
            while composing.load(ordering: .relaxed) {
                _ = compositor.compose(ptsMs: 66)
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        composer.start()
        let copied = compositor.capturePicture(into: target, timeoutMs: 5000)
        composing.store(false, ordering: .relaxed)
        #expect(copied, "the copy of a composed picture arrived")
        #expect(target.yuv(x: 74, y: 4).y >= 200, "scaled: the watermark at x 64 to 96 of 128: \(target.yuv(x: 74, y: 4))")
    }
}
