import CommandLineSupport
import Foundation

/// What a track per source costs (issue 34, `--record-tracks`): `livepush screen` recording the test
/// mic, the desktop audio and looping music at a small picture size (so that the video's encode
/// does not drown the audio's), with the mix alone and with the mix and three source tracks, runs
/// taken in turn. Inside `tools/testenv run` (its mic and desktop tone, its Xvfb).
enum RecordTracksBenchmark {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "Length of each recording (default 15)."),
        .value("runs", valueName: "N", help: "Runs of each; the median is printed (default 1)."),
    ]

    static func main(_ arguments: [String]) -> Never {
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "record-tracks")
        let seconds = parsed.seconds(default: 15)
        let runs = parsed.runs(default: 1)
        let environment = ProcessInfo.processInfo.environment
        guard let display = environment["DISPLAY"], let mic = environment["LIVEPUSH_TEST_MIC"] else {
            Terminal.printError("livepush-bench record-tracks: run it inside tools/testenv run (DISPLAY, LIVEPUSH_TEST_MIC)")
            Terminal.exit(.usage)
        }
        do {
            let music = try AudioBenchmark.makeMusicFile()
            defer { try? FileManager.default.removeItem(atPath: music) }
            var mixOnly: [Double] = [], tracks: [Double] = []
            for _ in 0..<runs {
                for withTracks in [false, true] {
                    let output = "/tmp/livepush-bench-tracks-\(getpid())-\(withTracks).mkv"
                    defer { try? FileManager.default.removeItem(atPath: output) }
                    let measured = try RecordBenchmark.measure(BenchSupport.sibling("livepush").path, [
                        "screen", output, "--display", display, "--region", "0,0,640,360", "--resolution", "640x360",
                        "--mic", mic, "--desktop-audio", "--bgm", music + ",loop", "--duration", String(seconds), "--quiet",
                    ] + (withTracks ? ["--record-tracks"] : []), seconds: seconds)
                    if withTracks { tracks.append(measured.cpuPct) } else { mixOnly.append(measured.cpuPct) }
                }
            }
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            print(String(format: "e2e record tracks=4 cpu_pct=%.1f video=640x360", median(tracks)))
            print(String(format: "e2e record tracks=1 cpu_pct=%.1f video=640x360", median(mixOnly)))
            print(String(format: "record tracks extra_cpu_pct=%.1f", median(tracks) - median(mixOnly)))
        } catch {
            Terminal.printError("livepush-bench record-tracks: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }
}
