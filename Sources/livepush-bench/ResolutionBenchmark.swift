import CaptureLink
import CommandLineSupport
import Foundation
import LinuxSystem
import Media

/// Adaptive resolution (issue 16b): what one size change costs the video pipeline's thread, the
/// steps `VideoPipeline.resize` takes: a new libx264 encoder at the new size, the new picture and
/// placeholder, the last picture scaled into it, and the first (key)frame encoded at the new size.
/// That time is one frame late at most when it is under a frame interval (33 ms at 30 fps).
enum ResolutionBenchmark {
    static let options: [OptionSpec] = [
        .value("count", valueName: "N", help: "Switches per case and run (default 10)."),
        .value("runs", valueName: "N", help: "Runs; the median of each figure is printed (default 3)."),
    ]

    static let cases: [(from: (Int, Int), to: (Int, Int))] = [
        ((1920, 1080), (1280, 720)), ((1280, 720), (960, 540)), ((960, 540), (640, 360)), ((640, 360), (960, 540)),
    ]

    static func main(_ arguments: [String]) -> Never {
        let parsed = ArgumentParser.parseOptionsOnly(
            arguments, options: options, command: "livepush-bench resolution",
            usage: "Usage: livepush-bench resolution [--count N] [--runs N]\n" + ArgumentParser.optionsHelp(options))
        let count = max(3, Int(parsed.value("count") ?? "10") ?? 10)
        let runs = parsed.runs(default: 3)
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        do {
            for (from, to) in cases {
                var p50: [Double] = [], worst: [Double] = []
                for _ in 0..<runs {
                    let times = try switchTimesMs(from: from, to: to, count: count).sorted()
                    p50.append(times[times.count / 2])
                    worst.append(times.last ?? 0)
                }
                print(String(format: "video resolution-switch %dx%d->%dx%d switch_ms_p50=%.1f switch_ms_max=%.1f",
                             from.0, from.1, to.0, to.1, median(p50), median(worst)))
            }
        } catch {
            Terminal.printError("livepush-bench resolution: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    /// The pipeline's steps for one change, `count` times, in ms.
    static func switchTimesMs(from: (Int, Int), to: (Int, Int), count: Int) throws -> [Double] {
        let old = try VideoFrame(width: from.0, height: from.1)
        old.fillBlack()
        let oldEncoder = try H264Encoder(settings: H264EncoderSettings(width: from.0, height: from.1, fps: 30, bitrateKbps: 2500))
        _ = try oldEncoder.encode(old, pts: 0)
        var times: [Double] = []
        for index in 0..<count {
            let startNs = MonotonicClock.nowNs()
            let encoder = try H264Encoder(settings: H264EncoderSettings(width: to.0, height: to.1, fps: 30, bitrateKbps: 2500))
            let picture = try VideoFrame(width: to.0, height: to.1)
            picture.scalePicture(from: old)
            _ = try VideoFrame(width: to.0, height: to.1)  // the placeholder
            picture.requestKeyframe(true)
            let packets = try encoder.encode(picture, pts: Int64(index + 1))
            times.append(Double(MonotonicClock.nowNs() - startNs) / 1e6)
            guard packets.first?.isKeyframe == true else { throw Failure(description: "the first frame was no keyframe") }
        }
        return times
    }

    struct Failure: Error, CustomStringConvertible { let description: String }
}
