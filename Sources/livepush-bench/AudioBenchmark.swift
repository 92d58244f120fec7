import AudioCapture
import CommandLineSupport
import Foundation
import Synchronization

/// Microphone capture: PipeWireAudioCapture in this process (48 kHz stereo F32, 20 ms chunks)
/// from the test mic, next to pw-record capturing the same source, in one run.
enum AudioBenchmark {
    static let options: [OptionSpec] = [
        .value("seconds", valueName: "N", help: "Length of each measurement (default 10)."),
        .value("runs", valueName: "N", help: "Runs of each case; the median is printed (default 3)."),
        .value("mic", valueName: "NAME", help: "Source node name (default: $LIVEPUSH_TEST_MIC, else the default source)."),
    ]

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func main(_ arguments: [String]) -> Never {
        let parsed: ParsedArguments
        do {
            parsed = try ArgumentParser.parse(arguments, options: options)
        } catch {
            Terminal.printError("livepush-bench audio: \(error)")
            Terminal.exit(.usage)
        }
        let seconds = Double(parsed.value("seconds") ?? "10") ?? 10
        let runs = max(1, Int(parsed.value("runs") ?? "3") ?? 3)
        let environmentMic = ProcessInfo.processInfo.environment["LIVEPUSH_TEST_MIC"].flatMap { $0.isEmpty ? nil : $0 }
        let mic = parsed.value("mic") ?? environmentMic
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        do {
            var ours: [(cpu: Double, chunksPerSecond: Double)] = []
            var reference: [Double] = []
            for _ in 0..<runs {
                ours.append(try measureCapture(mic: mic, seconds: seconds))
                reference.append(try measurePWRecord(mic: mic, seconds: seconds))
            }
            print(String(format: "audio mic-capture cpu_pct=%.2f chunks_per_s=%.1f", median(ours.map(\.cpu)),
                         median(ours.map(\.chunksPerSecond))))
            print(String(format: "pw-record mic-capture cpu_pct=%.2f", median(reference)))
            fflush(nil)
        } catch {
            Terminal.printError("livepush-bench audio: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    /// CPU of this process (over wall time, % of one core) while it captures `seconds` of the
    /// mic; the consumer touches every sample, as an encoder's input copy would.
    static func measureCapture(mic: String?, seconds: Double) throws -> (cpu: Double, chunksPerSecond: Double) {
        let chunks = Atomic<Int>(0)
        let checksum = Mutex<Float>(0)
        var settings = AudioCaptureSettings()
        settings.target = mic
        settings.sampleRate = 48000
        settings.channels = 2
        settings.chunkMs = 20
        let capture = try PipeWireAudioCapture(settings: settings, onChunk: { chunk in
            var sum: Float = 0
            for sample in chunk.samples { sum += sample }
            checksum.withLock { $0 += sum }
            chunks.add(1, ordering: .relaxed)
        }, onEvent: { _ in })
        defer { capture.stop() }
        Thread.sleep(forTimeInterval: 1)  // link and settle
        var before = rusage()
        getrusage(RUSAGE_SELF.rawValue, &before)
        let startChunks = chunks.load(ordering: .relaxed)
        let started = Date()
        Thread.sleep(forTimeInterval: seconds)
        var after = rusage()
        getrusage(RUSAGE_SELF.rawValue, &after)
        let elapsed = Date().timeIntervalSince(started)
        let counted = chunks.load(ordering: .relaxed) - startChunks
        guard counted > 0 else { throw Failure(description: "no audio arrived from \(mic ?? "the default source")") }
        let cpuSeconds = LinkBenchmark.cpuSeconds(after) - LinkBenchmark.cpuSeconds(before)
        return (100 * cpuSeconds / elapsed, Double(counted) / elapsed)
    }

    /// CPU of `pw-record` capturing the same source at 48 kHz stereo F32 into a file.
    static func measurePWRecord(mic: String?, seconds: Double) throws -> Double {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("lpb-audio-\(getpid()).wav")
        defer { try? FileManager.default.removeItem(at: file) }
        let recorder = Process()
        recorder.executableURL = URL(fileURLWithPath: "/usr/bin/pw-record")
        recorder.arguments = (mic.map { ["--target", $0] } ?? [])
            + ["--rate", "48000", "--channels", "2", "--format", "f32", file.path]
        recorder.standardError = FileHandle.nullDevice
        var before = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &before)
        let started = Date()
        try recorder.run()
        Thread.sleep(forTimeInterval: seconds + 1)
        recorder.interrupt()
        recorder.waitUntilExit()
        let elapsed = Date().timeIntervalSince(started)
        var after = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &after)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        guard bytes > 48000 * 8 else { throw Failure(description: "pw-record recorded \(bytes) bytes") }
        return 100 * (LinkBenchmark.cpuSeconds(after) - LinkBenchmark.cpuSeconds(before)) / elapsed
    }
}
