import AudioCapture
import AudioProcessing
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
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "audio")
        let seconds = parsed.seconds(default: 10), runs = parsed.runs(default: 3)
        let environmentMic = ProcessInfo.processInfo.environment["LIVEPUSH_TEST_MIC"].flatMap { $0.isEmpty ? nil : $0 }
        let mic = parsed.value("mic") ?? environmentMic
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        do {
            var ours: [(cpu: Double, chunksPerSecond: Double)] = []
            var reference: [Double] = []
            var encoded: [Double] = []
            var denoised: [Double] = []
            var decoded: [Double] = []
            var earLatencies: [Double] = []
            let music = try makeMusicFile()
            defer { try? FileManager.default.removeItem(atPath: music) }
            for _ in 0..<runs {
                ours.append(try measureCapture(mic: mic, seconds: seconds))
                encoded.append(try measureCapture(mic: mic, seconds: seconds, encodeAAC: true).cpu)
                denoised.append(try measureCapture(mic: mic, seconds: seconds, encodeAAC: true, denoise: true).cpu)
                reference.append(try measurePWRecord(mic: mic, seconds: seconds))
                decoded.append(try measureMusicDecode(path: music, seconds: seconds * 3))
                earLatencies.append(try measureEarMonitor(mic: mic, seconds: seconds))
            }
            print(String(format: "audio mic-capture cpu_pct=%.2f chunks_per_s=%.1f", median(ours.map(\.cpu)),
                         median(ours.map(\.chunksPerSecond))))
            print(String(format: "pw-record mic-capture cpu_pct=%.2f", median(reference)))
            print(String(format: "audio mic->aac cpu_pct=%.2f", median(encoded)))
            print(String(format: "audio mic->aac+denoise cpu_pct=%.2f", median(denoised)))
            print(String(format: "audio bgm-decode mp3 cpu_pct=%.2f", median(decoded)))
            print(String(format: "audio ear-monitor latency_ms=%.0f", median(earLatencies)))
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
    /// With `denoise` as well, speexdsp's noise suppression (high) runs on each 20 ms before
    /// the encoder (the `audio mic->aac+denoise` line).
    static func measureCapture(mic: String?, seconds: Double, encodeAAC: Bool = false, denoise: Bool = false) throws
        -> (cpu: Double, chunksPerSecond: Double)
    {
        let chunks = Atomic<Int>(0)
        let checksum = Mutex<Float>(0)
        var settings = AudioCaptureSettings()
        settings.target = mic
        settings.sampleRate = encodeAAC ? nil : 48000
        settings.channels = 2
        settings.chunkMs = 20
        let encoder = encodeAAC ? try AudioEncoding(denoise: denoise) : nil
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

extension AudioBenchmark {
    /// Ear monitoring's latency: the mic captured in 10 ms chunks (as the pusher does) played to
    /// the default sink through `PipeWirePlayback`; its own measure (capture time of the voice
    /// against when PipeWire will play the buffer), the mean over the last second.
    static func measureEarMonitor(mic: String?, seconds: Double) throws -> Double {
        let playback = try PipeWirePlayback(sink: nil, rateHz: 48000, channels: 2)
        defer { playback.stop() }
        var settings = AudioCaptureSettings()
        settings.target = mic
        settings.sampleRate = 48000
        settings.channels = 2
        settings.chunkMs = 10
        let capture = try PipeWireAudioCapture(settings: settings, onChunk: { chunk in
            playback.write(chunk.samples, ptsNs: chunk.ptsNs)
        }, onEvent: { _ in })
        defer { capture.stop() }
        Thread.sleep(forTimeInterval: seconds)
        guard let latencyMs = playback.latencyMs else { throw Failure(description: "no ear-monitor latency was measured") }
        return Double(latencyMs)
    }

    /// 30 s of a two-tone stereo MP3 at 44.1 kHz, 128 kbps (libmp3lame through ffmpeg).
    static func makeMusicFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lpb-bgm-\(getpid()).mp3").path
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                            "aevalsrc=0.3*sin(2*PI*440*t)|0.3*sin(2*PI*660*t):s=44100:d=30", "-c:a", "libmp3lame",
                            "-b:a", "128k", path]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        guard ffmpeg.terminationStatus == 0 else { throw Failure(description: "ffmpeg could not make the MP3") }
        return path
    }

    /// CPU share of one core that background music costs while it plays: the MP3 decoded and
    /// resampled to 48 kHz stereo (AudioFileDecoder, as `startBGM` plays it, looping), as fast as
    /// it goes; CPU seconds over the seconds of music decoded.
    static func measureMusicDecode(path: String, seconds: Double) throws -> Double {
        let decoder = try AudioFileDecoder(path: path, outputRateHz: 48000, outputChannels: 2)
        var before = rusage()
        getrusage(RUSAGE_SELF.rawValue, &before)
        var frames = 0
        var checksum: Float = 0
        while Double(frames) < seconds * 48000 {
            let samples = try decoder.decodeNext()
            if samples.isEmpty {
                try decoder.rewind()
                continue
            }
            frames += samples.count / 2
            checksum += samples[samples.count / 2]
        }
        var after = rusage()
        getrusage(RUSAGE_SELF.rawValue, &after)
        if checksum.isNaN { throw Failure(description: "the decoded music is not numbers") }
        return 100 * (LinkBenchmark.cpuSeconds(after) - LinkBenchmark.cpuSeconds(before)) / (Double(frames) / 48000)
    }
}

/// The pusher's audio path for one source: resampled to 48 kHz stereo, optionally noise
/// suppression, AAC-LC at 128 kbps. Used from PipeWire's thread only.
final class AudioEncoding: @unchecked Sendable {
    private var resampler: AudioResampler?
    private let encoder: AACEncoder
    private let suppressor: NoiseSuppressor?
    private var pending: [Float] = []
    private(set) var bytes = 0

    init(denoise: Bool = false) throws {
        encoder = try AACEncoder(settings: AACEncoderSettings(sampleRateHz: 48000, channels: 2, bitrateKbps: 128))
        suppressor = denoise ? NoiseSuppressor(frameSamples: 960, sampleRateHz: 48000, channels: 2, level: .high,
                                               automaticGain: false) : nil
    }

    func encode(_ chunk: PCMChunk) {
        if resampler?.inputRateHz != chunk.sampleRate || resampler?.inputChannels != chunk.channels {
            resampler = try? AudioResampler(inputRateHz: chunk.sampleRate, inputChannels: chunk.channels,
                                            outputRateHz: 48000, outputChannels: 2)
        }
        guard var samples = try? resampler?.convert(chunk.samples) else { return }
        if let suppressor {
            // 20 ms frames, as the pusher's mixer hands them to the suppressor.
            pending += samples
            samples = []
            while pending.count >= 1920 {
                var frame = Array(pending.prefix(1920))
                pending.removeFirst(1920)
                suppressor.process(&frame)
                samples += frame
            }
        }
        guard let packets = try? encoder.encode(samples) else { return }
        bytes += packets.reduce(0) { $0 + $1.data.count }
    }
}
