import Foundation
import Testing
import TestSupport

/// The receivers later tests rely on: nginx-rtmp takes a real publish and gives it back,
/// and the PipeWire virtual microphone plays its tone.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct RTMPServerTests {
    @Test func recordApplicationKeepsWhatWasPublished() throws {
        let key = UniqueName.make("testpattern")
        let publish = try ProcessRunner.run("ffmpeg", [
            "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
            "-t", "2", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p",
            "-f", "flv", try TestEnvironment.recordURL(key: key),
        ], timeoutSeconds: 30)
        #expect(publish.exitCode == 0, "\(publish)")

        let file = try TestEnvironment.recordedFile(key: key)
        let probe = try ProcessRunner.run("ffprobe", [
            "-v", "error", "-count_frames", "-select_streams", "v:0",
            "-show_entries", "stream=codec_name,width,height,nb_read_frames", "-of", "csv=p=0", file.path,
        ])
        #expect(probe.exitCode == 0, "\(probe)")
        let fields = probe.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        #expect(fields.prefix(3) == ["h264", "320", "240"])
        let frames = fields.count == 4 ? Int(fields[3]) ?? 0 : 0
        #expect((58...62).contains(frames), "2 s at 30 fps should be 60 frames, got \(frames)")
    }

    @Test func liveApplicationRelaysAStreamToAPlayer() throws {
        let key = UniqueName.make("live")
        let url = try TestEnvironment.liveURL(key: key)
        let publisher = try ProcessRunner.start("ffmpeg", [
            "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
            "-t", "10", "-c:v", "libx264", "-preset", "ultrafast", "-g", "15", "-f", "flv", url,
        ])
        defer { publisher.interrupt(); _ = publisher.finish() }
        #expect(try waitUntil(timeoutSeconds: 15, intervalSeconds: 0.1) { try TestEnvironment.listsStream(key: key) },
                "nginx's /stat never listed \(key): \(publisher.errorSoFar)")

        // A live FLV stream announces no end; without a bound ffprobe waits 5 s for an audio
        // stream that never comes. The read timeout keeps a dead server from hanging the test.
        let probe = try ProcessRunner.run("ffprobe", [
            "-v", "error", "-rw_timeout", "5000000", "-analyzeduration", "1000000",
            "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", url,
        ], timeoutSeconds: 15)
        #expect(probe.exitCode == 0, "\(probe)")
        #expect(probe.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,320,240")
    }
}

@Suite(.enabled(if: TestEnvironment.isEnabled(.pipewire), "needs the test PipeWire daemon (make test)"), .timeLimit(.minutes(10)))
struct VirtualMicrophoneTests {
    @Test func recordingTheMicrophoneForOneSecondHearsTheTone() throws {
        let microphone = try TestEnvironment.microphone()
        let toneHz = try TestEnvironment.toneHz()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("mic") + ".wav")
        defer { try? FileManager.default.removeItem(at: file) }

        let recorder = try ProcessRunner.start("pw-record", [
            "--target", microphone, "--rate", "48000", "--channels", "1", "--format", "s16", file.path,
        ])
        Thread.sleep(forTimeInterval: 1.2)  // let it run: 1.2 s of recording (at least 36000 samples are required)
        // pw-record has no duration option; on SIGINT it completes the WAV header and exits with 1.
        // What it wrote is checked by decoding it.
        recorder.interrupt()
        _ = recorder.finish()

        let samples = try AudioAnalysis.decodeMono(file.path)
        #expect(samples.count >= 36_000, "expected about 1 s at 48 kHz, got \(samples.count) samples")
        // Skip the first 100 ms, where the stream is still being linked.
        let steady = Array(samples.dropFirst(4800))
        #expect(AudioAnalysis.rmsDbfs(steady) > -30, "the microphone is silent")
        let measuredHz = AudioAnalysis.dominantFrequencyHz(steady, sampleRateHz: 48000)
        #expect(abs(measuredHz - toneHz) <= 2, "tone at \(measuredHz) Hz, expected \(toneHz) Hz")
    }
}
