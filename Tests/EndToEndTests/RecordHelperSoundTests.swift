import Foundation
import Testing
import TestSupport

/// `livepush record --group` keeps the sound a helper sends (its AUDIO, granted since the pusher
/// has an audio pipeline), with the mic or without: `--no-mic` drops the mic, never the helper's
/// sound (issue 29, problem 9; before, `record --no-mic` made a video-only file and the helper's
/// 440 Hz was thrown away). Measured in the recording: the tone's level per 100 ms.
@Suite(.timeLimit(.minutes(10))) struct RecordHelperSoundTests {
    let livepush = BuiltProducts.path("livepush")

    @Test func recordWithoutTheMicKeepsTheHelpersSound() throws {
        let group = UniqueName.make("rec-sound")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(group + ".mkv").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let record = try ProcessRunner.start(livepush, ["record", "--group", group, file, "--no-mic", "--resolution",
                                                        "320x240", "--quiet", "--duration", "6"])
        // The C reference helper with its 440 Hz sine as AUDIO, for 3 s of frames.
        let helper = try ProcessRunner.run(try Repository.cPatternHelper(), [
            "--group", group, "--size", "320x240", "--audio", "--frames", "90",
        ], timeoutSeconds: 60)
        #expect(helper.exitCode == 0, "\(helper)")
        let result = record.finish(timedOut: !waitUntil(timeoutSeconds: 30) { !record.isRunning })
        #expect(result.exitCode == 0, "\(result)")
        let audio = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries",
                                                      "stream=codec_name", "-of", "csv=p=0", file])
        #expect(audio.standardOutput.contains("aac"), "no audio track in the recording: \(audio)")
        let samples = try AudioAnalysis.decodeMono(file)
        let levels = AudioAnalysis.toneLevelsDbfs(samples, frequencyHz: 440, sampleRateHz: 48000).windows
        let loud = levels.filter { $0 > -30 }.count
        // About 3 s of the helper's tone (its frames and its sound go on for 90 frames at 30 fps).
        #expect(loud >= 20, "440 Hz above -30 dBFS in \(loud) windows of 100 ms of \(levels.count)")
    }
}
