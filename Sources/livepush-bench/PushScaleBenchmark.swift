import CommandLineSupport
import Foundation
import Media

/// The push benchmark's harder cases, printed after its 1080p30 lines in the same run (issue 22):
/// - `scroll`: the same three publishers on a screen that scrolls entirely every frame (x11-paint's
///   pattern scroll), where x264 works as hard as it can;
/// - `floor`: libx264 alone (libavcodec in this process) encoding the same pictures from memory
///   (BenchContent) with the same settings, paced at 30 frames a second and unpaced, for both
///   screens, and ours minus the paced floor;
/// - `1080p60`, `1440p30`: livepush and ffmpeg at the same settings (1440p on a private Xvfb of
///   that size), with fresh_fps= (distinct pictures a second at the receiver) beside fps=.
enum PushScaleBenchmark {
    static let options: [OptionSpec] = [
        .value("extra", valueName: "LIST",
               help: "Cases after the 1080p30 lines (default scroll,floor,record-crf,1080p60,1440p30; none: only those)."),
    ]
    static let known = ["scroll", "floor", "record-crf", "1080p60", "1440p30"]

    /// Bitrates for the larger cases (what streaming services suggest for them).
    static let bitrateKbps = ["1080p60": 6000, "1440p30": 9000]

    struct Context {
        let painter: String
        let display: String
        let rtmp: String
        let runs: Int
        let seconds: Double
        let warmup: Double
        let logs: String
        /// The median CPU of `e2e push 1080p30` on the square screen, from the lines above (nil: not run).
        let squareE2ECpuPct: Double?
    }

    /// The cases of `--extra`, checked; exits with a usage error for an unknown one.
    static func cases(_ parsed: ParsedArguments) -> [String] {
        let text = parsed.value("extra") ?? known.joined(separator: ",")
        if text == "none" { return [] }
        let cases = text.split(separator: ",").map(String.init)
        if let unknown = cases.first(where: { !known.contains($0) }) {
            Terminal.printError("livepush-bench push: unknown --extra case '\(unknown)' (want \(known.joined(separator: ", ")) or none)")
            Terminal.exit(.usage)
        }
        return cases
    }

    static func run(_ cases: [String], _ context: Context, publishers: [String]) throws {
        var scrollE2E: Double?
        if cases.contains("scroll") {
            scrollE2E = try scroll(context, publishers: publishers.filter { ["e2e", "ffmpeg", "gstreamer"].contains($0) })
        }
        if cases.contains("floor") {
            for (content, ours) in [(BenchContent.Kind.square, context.squareE2ECpuPct), (.scroll, scrollE2E)] {
                let floor = try floors(content, context)
                print(String(format: "floor x264 1080p30 content=%@ cpu_pct=%.1f unpaced_cpu_pct=%.1f",
                             content.rawValue, floor.paced, floor.unpaced))
                if let ours {
                    print(String(format: "push over floor 1080p30 content=%@ e2e_minus_floor_pct=%.1f",
                                 content.rawValue, ours - floor.paced))
                }
            }
        }
        if cases.contains("record-crf") { try recordCRF(context) }
        for mode in ["1080p60", "1440p30"] where cases.contains(mode) {
            try scaled(mode, context)
        }
    }

    // MARK: Scroll

    /// The publishers on the scrolling screen (a painter window over the time code one); returns
    /// the median CPU of e2e when it ran.
    static func scroll(_ context: Context, publishers: [String]) throws -> Double? {
        let painter = try PushBenchmark.startPainter(context.painter, display: context.display,
                                                     geometry: "\(PushBenchmark.size)+0+0", pattern: ["scroll"])
        defer { PushBenchmark.stop(painter) }
        var results: [String: [PushBenchmark.Measurement]] = [:]
        for run in 1...context.runs {
            for name in publishers {
                let key = "bench-scroll-\(name)-\(getpid())-\(run)"
                let url = "\(context.rtmp)/live/\(key)"
                let publisher = PushBenchmark.makePublisher(name, display: context.display, url: url)
                results[name, default: []].append(try PushBenchmark.measure(
                    publisher, receiverInput: PushBenchmark.receiverInput(url), receiverFirst: false,
                    seconds: context.seconds, warmup: context.warmup, logs: context.logs,
                    label: "\(name) scroll run \(run)/\(context.runs)", joinURL: url))
            }
        }
        for name in publishers {
            print(line("\(name) push 1080p30 content=scroll", results[name] ?? []))
        }
        if let ours = results["e2e"], let ffmpeg = results["ffmpeg"], let gstreamer = results["gstreamer"] {
            print(String(format: "push ratios 1080p30 content=scroll cpu_vs_ffmpeg=%.2f cpu_vs_gstreamer=%.2f "
                + "latency_p50_vs_gstreamer=%.2f", median(ours.map(\.cpuPct)) / median(ffmpeg.map(\.cpuPct)),
                median(ours.map(\.cpuPct)) / median(gstreamer.map(\.cpuPct)),
                median(ours.map(\.latencyP50Ms)) / median(gstreamer.map(\.latencyP50Ms))))
        }
        return results["e2e"].map { median($0.map(\.cpuPct)) }
    }

    // MARK: The floor

    /// x264 alone on `content` at the e2e publisher's settings: the median over the runs of the
    /// paced CPU (frames at 30 a second for `seconds`) and of the unpaced one (as many frames back
    /// to back, CPU over the media's duration).
    static func floors(_ content: BenchContent.Kind, _ context: Context) throws -> (paced: Double, unpaced: Double) {
        let pictures = try BenchContent(content, width: 1920, height: 1080)
        var settings = H264EncoderSettings(width: 1920, height: 1080, fps: PushBenchmark.fps, bitrateKbps: 4500)
        settings.gopSeconds = 2
        let frames = Int(context.seconds) * PushBenchmark.fps
        var paced: [Double] = [], unpaced: [Double] = []
        for run in 1...context.runs {
            let live = try EncodeTrial.run(pictures, settings: settings, frames: frames, paced: true)
            let fast = try EncodeTrial.run(pictures, settings: settings, frames: frames, paced: false)
            let mediaSeconds = Double(frames) / Double(PushBenchmark.fps)
            paced.append(live.cpuPct)
            unpaced.append(100 * fast.encodeCPUSeconds / mediaSeconds)
            PushBenchmark.log(String(format: "floor %@ run %d/%d: paced cpu_pct=%.1f (draw %.2f s, %.0f kbps) "
                + "unpaced cpu_pct=%.1f in %.1f s", content.rawValue, run, context.runs, live.cpuPct,
                live.drawCPUSeconds, Double(live.bytes) * 8 / 1000 / mediaSeconds, unpaced.last!, fast.wallSeconds))
        }
        return (median(paced), median(unpaced))
    }

    // MARK: Push and a recording of its own quality

    /// e2e on the square screen (the time code painter of the lines above) while recording at
    /// CRF 20 with its own encode; the recording's frames and bitrate go to stderr.
    static func recordCRF(_ context: Context) throws {
        var results: [PushBenchmark.Measurement] = []
        for run in 1...context.runs {
            let url = "\(context.rtmp)/live/bench-recordcrf-\(getpid())-\(run)"
            let file = "/tmp/lpb-recordcrf-\(getpid())-\(run).mkv"
            defer { try? FileManager.default.removeItem(atPath: file) }
            let plain = PushBenchmark.makePublisher("e2e", display: context.display, url: url)
            let publisher = PushBenchmark.Publisher(name: "e2e-record", executable: plain.executable,
                                                    arguments: plain.arguments + ["--record", file,
                                                                                  "--record-quality", "crf=20"])
            results.append(try PushBenchmark.measure(
                publisher, receiverInput: PushBenchmark.receiverInput(url), receiverFirst: false,
                seconds: context.seconds, warmup: context.warmup, logs: context.logs,
                label: "e2e push+record run \(run)/\(context.runs)", joinURL: url))
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
            PushBenchmark.log("e2e push+record run \(run): recording \(size / 1024) KiB, "
                + String(format: "%.1f", (try? RecordBenchmark.framesPerSecond(file)) ?? 0) + " fps")
        }
        print(line("e2e push+record 1080p30 record=crf20", results))
        if let plain = context.squareE2ECpuPct {
            print(String(format: "push+record 1080p30 record=crf20 extra_cpu_pct=%.1f",
                         median(results.map(\.cpuPct)) - plain))
        }
    }

    // MARK: 1080p60 and 1440p30

    static func scaled(_ mode: String, _ context: Context) throws {
        let (width, height, fps) = mode == "1080p60" ? (1920, 1080, 60) : (2560, 1440, 30)
        let bitrate = bitrateKbps[mode] ?? 4500
        // 1440p needs a screen that big: a private Xvfb (nginx and PulseAudio stay the test environment's).
        let xvfb = width > 1920 ? try PrivateXvfb(size: "\(width)x\(height)") : nil
        defer { xvfb?.stop() }
        let display = xvfb?.display ?? context.display
        let painter = try PushBenchmark.startPainter(context.painter, display: display, geometry: "\(width)x\(height)+0+0",
                                                     pattern: ["timecode", "1e2a3a", "ffcc00", "240", "6"])
        defer { PushBenchmark.stop(painter) }
        var results: [String: [PushBenchmark.Measurement]] = [:]
        for run in 1...context.runs {
            for name in ["e2e", "ffmpeg"] {
                let url = "\(context.rtmp)/live/bench-\(mode)-\(name)-\(getpid())-\(run)"
                let publisher = makePublisher(name, display: display, url: url, width: width, height: height, fps: fps,
                                              bitrateKbps: bitrate)
                results[name, default: []].append(try PushBenchmark.measure(
                    publisher, receiverInput: PushBenchmark.receiverInput(url), receiverFirst: false,
                    seconds: context.seconds, warmup: context.warmup, logs: context.logs,
                    label: "\(name) \(mode) run \(run)/\(context.runs)", joinURL: url))
            }
        }
        for name in ["e2e", "ffmpeg"] { print(line("\(name) push \(mode)", results[name] ?? [])) }
        if let ours = results["e2e"], let ffmpeg = results["ffmpeg"] {
            print(String(format: "push ratios %@ cpu_vs_ffmpeg=%.2f latency_p50_vs_ffmpeg=%.2f", mode,
                         median(ours.map(\.cpuPct)) / median(ffmpeg.map(\.cpuPct)),
                         median(ours.map(\.latencyP50Ms)) / median(ffmpeg.map(\.latencyP50Ms))))
        }
    }

    /// livepush and ffmpeg at one size, rate and CBR, otherwise as in PushBenchmark.makePublisher.
    static func makePublisher(_ name: String, display: String, url: String, width: Int, height: Int, fps: Int,
                              bitrateKbps: Int) -> PushBenchmark.Publisher {
        let kbps = String(bitrateKbps)
        if name == "e2e" {
            return PushBenchmark.Publisher(name: name, executable: BenchSupport.sibling("livepush").path, arguments: [
                "push", url, "--display", display, "--resolution", "\(width)x\(height)", "--fps", String(fps),
                "--gop", "2", "--quality", "custom", "--bitrate", kbps, "--min-bitrate", kbps,
                "--initial-bitrate", kbps, "--no-auto-bitrate", "--quiet", "--allow-core-dump",  // smaps without root
            ])
        }
        return PushBenchmark.Publisher(name: name, executable: PushBenchmark.ffmpeg, arguments: [
            "-nostdin", "-loglevel", "error", "-f", "x11grab", "-framerate", String(fps), "-video_size",
            "\(width)x\(height)", "-i", display, "-f", "pulse", "-i", "default", "-c:v", "libx264", "-preset", "veryfast",
            "-tune", "zerolatency", "-b:v", "\(kbps)k", "-minrate", "\(kbps)k", "-maxrate", "\(kbps)k",
            "-bufsize", "\(kbps)k", "-g", String(2 * fps), "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k",
            "-f", "flv", url,
        ])
    }

    static func line(_ name: String, _ all: [PushBenchmark.Measurement]) -> String {
        String(format: "%@ cpu_pct=%.1f rss_mib=%.1f fps=%.1f fresh_fps=%.1f latency_ms_p50=%.1f latency_ms_p95=%.1f",
               name, median(all.map(\.cpuPct)), median(all.map(\.rssMiB)), median(all.map(\.fps)),
               median(all.map(\.freshFps)), median(all.map(\.latencyP50Ms)), median(all.map(\.latencyP95Ms)))
            + JoinTime.field(all)
    }

    static func median(_ values: [Double]) -> Double { PushBenchmark.median(values) }
}
