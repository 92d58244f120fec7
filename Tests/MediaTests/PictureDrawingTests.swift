import Media
import Testing

/// The picture path's drawing in Media (issue 16): the preview's display modes and mirror, a
/// watermark's placement and blend, measured in the pixels they write.
@Suite(.timeLimit(.minutes(10))) struct PictureDrawingTests {
    /// 320x240, grey levels by area: the top-left quadrant black in its upper half (rows 0-59)
    /// and white below (60-119), the top-right quadrant black, the bottom half mid grey.
    private func quadrants() throws -> VideoFrame {
        let frame = try VideoFrame(width: 320, height: 240)
        frame.fillBlack()
        frame.withPlanes { planes in
            for row in 0..<240 {
                for column in 0..<320 {
                    let luma: UInt8 = row >= 120 ? 126 : (column < 160 && row >= 60 ? 235 : 16)
                    planes.y[row * planes.yStride + column] = luma
                }
            }
        }
        return frame
    }

    /// The preview of `frame` in a 640x240 window: the grey (B of B G R X) at each point.
    private func preview(_ frame: VideoFrame, _ mode: ScaleMode, mirrored: Bool = false,
                         at points: [(Int, Int)]) -> [Int]
    {
        var pixels = [UInt8](repeating: 77, count: 640 * 240 * 4)
        pixels.withUnsafeMutableBytes { buffer in
            PreviewRenderer().render(frame, into: buffer.baseAddress!, width: 640, height: 240, strideBytes: 640 * 4,
                                     scaleMode: mode, mirrored: mirrored)
        }
        return points.map { Int(pixels[($0.1 * 640 + $0.0) * 4]) }
    }

    @Test func fitShowsTheWholePictureBetweenBlackBars() throws {
        // 4:3 in 8:3: 320x240 in the middle, x 160 to 479.
        let values = preview(try quadrants(), .fit, at: [(10, 100), (630, 100), (200, 100), (200, 30), (300, 200)])
        #expect(values[0] == 0 && values[1] == 0, "bars: \(values)")
        #expect(values[2] >= 250 && values[3] <= 5 && abs(values[4] - 128) <= 6, "picture: \(values)")
    }

    @Test func fillStretchesAndCropCutsTheOverflow() throws {
        // Fill: the whole picture stretched; (10, 10) is its top-left corner, black.
        let fill = preview(try quadrants(), .fill, at: [(10, 10), (10, 200)])
        #expect(fill[0] <= 5 && abs(fill[1] - 128) <= 6, "fill: \(fill)")
        // Crop: rows 60-179 of the picture fill the window; (10, 10) is row 65, white.
        let crop = preview(try quadrants(), .crop, at: [(10, 10), (10, 230), (630, 10)])
        #expect(crop[0] >= 250 && abs(crop[1] - 128) <= 6 && crop[2] <= 5, "crop: \(crop)")
    }

    @Test func thePreviewMirrorSwapsLeftAndRight() throws {
        let mirrored = preview(try quadrants(), .crop, mirrored: true, at: [(10, 10), (630, 10)])
        #expect(mirrored[0] <= 5 && mirrored[1] >= 250, "mirrored: \(mirrored)")
    }

    @Test func aWatermarkIsPlacedInEvenPixelsWithItsImagesAspect() {
        let placement = WatermarkPlacement(x: 0.8, y: 0.05, width: 0.15, imageWidth: 200, imageHeight: 100,
                                           pictureWidth: 1920, pictureHeight: 1080)
        #expect(placement == WatermarkPlacement(x: 0.8, y: 0.05, width: 0.15, imageWidth: 400, imageHeight: 200,
                                                pictureWidth: 1920, pictureHeight: 1080))
        #expect((placement.x, placement.y, placement.width, placement.height) == (1536, 54, 288, 144))
    }

    @Test func aWatermarkOverTheEdgeIsCutThereAndTouchesNothingElse() throws {
        let frame = try VideoFrame(width: 64, height: 64)
        frame.fillBlack()
        let white = WatermarkImage(width: 8, height: 8, bgra: [UInt8](repeating: 255, count: 8 * 8 * 4))
        let placement = WatermarkPlacement(x: 0.875, y: 0.875, width: 0.25, imageWidth: 8, imageHeight: 8,
                                           pictureWidth: 64, pictureHeight: 64)
        let overlay = try WatermarkOverlay(image: white, placement: placement, opacity: 1, pictureWidth: 64, pictureHeight: 64)
        overlay.blend(into: frame)
        #expect(frame.yuv(x: 60, y: 60).y >= 230, "inside, up to the edge: \(frame.yuv(x: 60, y: 60))")
        #expect(frame.yuv(x: 55, y: 60).y == 16 && frame.yuv(x: 60, y: 55).y == 16, "beside it: untouched")
    }
}

