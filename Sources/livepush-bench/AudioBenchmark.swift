import AudioCapture
import CommandLineSupport
import Foundation
import Media
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
            var encoded: [Double] = []
            for _ in 0..<runs {
                ours.append(try measureCapture(mic: mic, seconds: seconds))
                encoded.append(try measureCapture(mic: mic, seconds: seconds, encodeAAC: true).cpu)
                reference.append(try measurePWRecord(mic: mic, seconds: seconds))
            }
            print(String(format: "audio mic-capture cpu_pct=%.2f chunks_per_s=%.1f", median(ours.map(\.cpu)),
                         median(ours.map(\.chunksPerSecond))))
            print(String(format: "pw-record mic-capture cpu_pct=%.2f", median(reference)))
            print(String(format: "audio mic->aac cpu_pct=%.2f", median(encoded)))
            fflush(nil)
        } catch {
            Terminal.printError("livepush-bench audio: \(error)")
            Terminal.exit(.failure)
        }
        Terminal.exit(.success)
    }

    /// CPU of this process (over wall time, % of one core) while it captures `seconds` of the
    /// mic; the consumer touches every sample, as an encoder's input copy would.
    /// With `encodeAAC`, each chunk goes through the pusher's audio path instead: libswresample
    /// to 48 kHz stereo (a pass-through at a 48 kHz graph) and FFmpeg's AAC-LC at 128 kbps
    /// (the `audio mic->aac` line).
    static func measureCapture(mic: String?, seconds: Double, encodeAAC: Bool = false) throws
        -> (cpu: Double, chunksPerSecond: Double)
    {
        let chunks = Atomic<Int>(0)
        let checksum = Mutex<Float>(0)
        var settings = AudioCaptureSettings()
        settings.target = mic
        settings.sampleRate = encodeAAC ? nil : 48000
        settings.channels = 2
        settings.chunkMs = 20
        let encoder = encodeAAC ? try AudioEncoding() : nil
        let capture = try PipeWireAudioCapture(settings: settings, onChunk: { chunk in
            if let encoder {
                encoder.encode(chunk)
            } else {
                var sum: Float = 0
                for sample in chunk.samples { sum += sample }
                checksum.withLock { $0 += sum }
            }
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
        let cpuPct = try BenchSupport.cpuPercent(running: recorder, seconds: seconds + 1) { $0.interrupt() }.cpuPct
        let bytes = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        guard bytes > 48000 * 8 else { throw Failure(description: "pw-record recorded \(bytes) bytes") }
        return cpuPct
    }
}

/// The pusher's audio path for one source: resampled to 48 kHz stereo, AAC-LC at 128 kbps.
/// Used from PipeWire's thread only.
final class AudioEncoding: @unchecked Sendable {
    private var resampler: AudioResampler?
    private let encoder: AACEncoder
    private(set) var bytes = 0

    init() throws {
        encoder = try AACEncoder(settings: AACEncoderSettings(sampleRateHz: 48000, channels: 2, bitrateKbps: 128))
    }

    func encode(_ chunk: PCMChunk) {
        if resampler?.inputRateHz != chunk.sampleRate || resampler?.inputChannels != chunk.channels {
            resampler = try? AudioResampler(inputRateHz: chunk.sampleRate, inputChannels: chunk.channels,
                                            outputRateHz: 48000, outputChannels: 2)
        }
        guard let samples = try? resampler?.convert(chunk.samples),
              let packets = try? encoder.encode(samples) else { return }
        bytes += packets.reduce(0) { $0 + $1.data.count }
    }
}
