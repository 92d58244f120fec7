import CommandLineSupport
import Foundation
import Media

/// The picture path (issue 16): what a watermark costs per frame, blended into a 1080p I420
/// picture (libyuv's I420Blend over its 320x180 rectangle), and what a PNG snapshot of it costs.
enum PictureBenchmark {
    static let options: [OptionSpec] = [
        .value("count", valueName: "N", help: "Blends per run (default 2000; a tenth as many snapshots)."),
        .value("runs", valueName: "N", help: "Runs; the median of each figure is printed (default 3)."),
    ]

    static func main(_ arguments: [String]) -> Never {
        let parsed = ArgumentParser.parseOptionsOnly(
            arguments, options: options, command: "livepush-bench picture",
            usage: "Usage: livepush-bench picture [--count N] [--runs N]\n" + ArgumentParser.optionsHelp(options))
        let count = max(10, Int(parsed.value("count") ?? "2000") ?? 2000)
        let runs = parsed.runs(default: 3)
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        do {
            let frame = try VideoFrame(width: 1920, height: 1080)
            frame.fillBlack()
            // A 320x180 logo whose alpha runs from transparent (left) to opaque (right).
            var bgra = [UInt8](repeating: 0, count: 320 * 180 * 4)
            for row in 0..<180 {
                for column in 0..<320 {
                    let index = (row * 320 + column) * 4
                    bgra[index] = UInt8(column % 256)
                    bgra[index + 1] = UInt8(row)
                    bgra[index + 2] = 200
                    bgra[index + 3] = UInt8(column * 255 / 319)
                }
            }
            let image = WatermarkImage(width: 320, height: 180, bgra: bgra)
            let placement = WatermarkPlacement(x: 0.8, y: 0.05, width: 320.0 / 1920, imageWidth: 320, imageHeight: 180,
                                               pictureWidth: 1920, pictureHeight: 1080)
            let overlay = try WatermarkOverlay(image: image, placement: placement, opacity: 0.8, pictureWidth: 1920,
                                               pictureHeight: 1080)
            let png = try PNGEncoder(width: 1920, height: 1080)
            var blendMs: [Double] = [], pngMs: [Double] = [], pngBytes: [Double] = []
            for _ in 0..<runs {
                var times: [Double] = []
                for _ in 0..<count {
                    let start = DispatchTime.now().uptimeNanoseconds
                    overlay.blend(into: frame)
                    times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
                }
                blendMs.append(median(times))
                var pngTimes: [Double] = []
                var bytes = 0
                for _ in 0..<max(3, count / 100) {
                    let start = DispatchTime.now().uptimeNanoseconds
                    bytes = try png.encode(frame).count
                    pngTimes.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
                }
                pngMs.append(median(pngTimes))
                pngBytes.append(Double(bytes))
            }
            print(String(format: "video watermark 1080p %dx%d blend_ms_p50=%.3f", placement.width, placement.height,
                         median(blendMs)))
            print(String(format: "video snapshot 1080p png_ms_p50=%.1f png_bytes=%.0f", median(pngMs), median(pngBytes)))
            fflush(nil)
        } catch {
            Terminal.printError("livepush-bench picture: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }
}
