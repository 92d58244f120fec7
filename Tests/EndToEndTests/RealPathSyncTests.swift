import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// A/V sync on the real path: `livepush screen` with the real X11 helper and the real PipeWire
    /// microphone. Tests/Fixtures/av_stimulus.py turns a window white and starts a 3 kHz burst in
    /// the sound it plays into the test mic at the same instants, ten times; in the recording each
    /// flash's first white frame is paired with the nearest burst's onset, on the file's own
    /// timestamps.
    ///
    /// The stimulus's sound reaches the graph through pw-cat, which adds its own buffering (one
    /// quantum, about 21 ms, and what it reads ahead), and a flash reaches a frame at the next grab
    /// (up to 33 ms), so the bounds are wider than the synthetic-helper test's ±40 ms: the median
    /// within ±120 ms and every onset within ±200 ms. What they catch is a mic timeline that drifts
    /// away from the picture (one run before CaptureTimeline put the mic 591 ms late after 10 s).
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.pipewire),
                    "needs the test Xvfb and PipeWire (make test)"), .timeLimit(.minutes(10)))
    struct RealPathSyncTests {
        let livepush = BuiltProducts.path("livepush")

        @Test(.timeLimit(.minutes(10))) func flashAndBurstStayInSyncThroughTheX11HelperAndTheMicrophone() throws {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("sync")).path + ".mkv"
            defer { try? FileManager.default.removeItem(atPath: path) }
            let display = try TestEnvironment.display()
            let recorder = try ProcessRunner.start(livepush, [
                "screen", path, "--display", display, "--region", "100,100,320,240", "--resolution", "320x240",
                "--quiet", "--mic", try TestEnvironment.microphone(),
            ])
            try #require(recorder.waitForError("screen capture started", timeoutSeconds: 20), "\(recorder.errorSoFar)")
            let painter = [try Repository.x11Painter(), "--display", display, "--override-redirect",
                           "--geometry", "320x240+100+100"].joined(separator: "\u{1f}")
            let stimulus = try ProcessRunner.run("python3", [
                Repository.path("Tests/Fixtures/av_stimulus.py"), painter,
                try TestEnvironment.value("LIVEPUSH_TEST_MIC_SINK", of: .pipewire), "10",
            ], timeoutSeconds: 40)
            recorder.interrupt()
            let recorded = recorder.finish()
            try #require(stimulus.exitCode == 0, "\(stimulus)")
            try #require(recorded.exitCode == 0, "\(recorded)")
            #expect(stimulus.standardOutput.split(separator: "\n").count == 10, "\(stimulus)")

            let offsetsMs = try AVSync.offsetsMs(path, burstHz: 3000)
            print("A/V offset on the real path (audio - video), ms: \(offsetsMs.map { Int($0.rounded()) })")
            try #require(offsetsMs.count >= 10, "flashes paired with bursts: \(offsetsMs)")
            let sorted = offsetsMs.sorted()
            #expect(abs(sorted[sorted.count / 2]) <= 120, "median offset of \(offsetsMs)")
            #expect(sorted.allSatisfy { abs($0) <= 200 }, "largest offset of \(offsetsMs)")
        }
    }
}

/// Onsets of flashes (first frame whose mean luma crosses mid-grey) and of tone bursts (first 2.5 ms
/// window whose power at the burst's frequency passes a threshold after 0.5 s of quiet), read by
/// ReceivedMedia's SyncMarks from a recording, each on its stream's own timestamps.
enum AVSync {
    /// For each flash, the nearest burst onset minus the flash onset, in ms.
    static func offsetsMs(_ path: String, burstHz: Double) throws -> [Double] {
        let videoOnsets = try flashOnsets(path)
        let audioOnsets = try burstOnsets(path, frequencyHz: burstHz)
        try #require(!videoOnsets.isEmpty && !audioOnsets.isEmpty,
                     "flashes at \(videoOnsets), bursts at \(audioOnsets)")
        return SyncMarks.pairs(flashesS: videoOnsets, onsetsS: audioOnsets).map(\.offsetMs)
    }

    static func flashOnsets(_ path: String) throws -> [Double] {
        SyncMarks.flashOnsetsS(try ReceivedPictures.decode(path, width: 8))
    }

    static func burstOnsets(_ path: String, frequencyHz: Double) throws -> [Double] {
        SyncMarks.burstOnsetsS(try AudioAnalysis.decodeMono(path), startS: try MediaProbe.audioStartTime(path),
                               frequencyHz: frequencyHz)
    }
}
