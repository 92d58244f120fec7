import AudioCapture
import Foundation
import Testing
import TestSupport

/// A capture whose thread loop runs late loses no samples (issue 29). On a busy machine the
/// capture's thread is not scheduled for tens or hundreds of milliseconds; here `onChunk` itself
/// holds the loop for 200 ms after every 25th chunk (every 0.5 s of sound), which is what such a
/// machine does to it, deterministically. Before the data loop handed the buffers over
/// (`SampleHandoff`), PipeWire had no free buffer to fill while the loop was held, and each
/// stall lost its samples: the timeline jumped forward after every one.
@Suite(.enabled(if: TestEnvironment.isEnabled(.pipewire), "needs the test PipeWire daemon (make test)"),
       .timeLimit(.minutes(10)))
struct LateLoopTests {
    @Test func aLoopHeld200msEveryHalfSecondLosesNoSamples() throws {
        var settings = AudioCaptureSettings()
        settings.target = try TestEnvironment.microphone()
        let recorder = CaptureRecorder()
        let capture = try PipeWireAudioCapture(settings: settings, onChunk: { chunk in
            recorder.record(chunk)
            if recorder.chunkCount % 25 == 0 { Thread.sleep(forTimeInterval: 0.2) }  // the loop held
        }, onEvent: { recorder.record($0) })
        // 6 s of sound: 300 chunks of 20 ms, with 12 stalls.
        let got = recorder.wait(timeoutSeconds: 20) { $0.chunkCount >= 300 }
        capture.stop()
        let arrivals = recorder.chunks
        try #require(got, "only \(arrivals.count) chunks in 20 s")

        // One sample-exact timeline: every step 20 ms. A forward jump is lost sound; two are
        // allowed for xruns of the test graph itself under the full suite's load (seen once: two
        // jumps in 308 chunks), and what they lost together is bounded below. Before the handoff:
        // 13 jumps and 2233 ms lost.
        let pts = arrivals.map(\.chunk.ptsNs)
        let steps = ChunkTimeline.problems(pts, chunkNs: 20_000_000, maxDiscontinuities: 2)
        #expect(steps.isEmpty, "\(steps)")
        let lostMs = zip(pts, pts.dropFirst()).map { Double($1 - $0) / 1e6 - 20 }.filter { $0 > 1 }.reduce(0, +)
        #expect(lostMs < 100, "\(lostMs) ms of sound lost across 12 stalls of the loop")
        // And none of it fell behind the clock for good: the last chunk arrived within a stall
        // and a quantum of its capture.
        let last = try #require(arrivals.last)
        let lagMs = Double(last.arrivedNs - last.chunk.ptsNs) / 1e6
        #expect(lagMs < 300, "the last chunk arrived \(lagMs) ms after its capture")
        // The tone is whole: the samples delivered are the tone's, not zeros. A lost buffer shows
        // as a jump above; a silent chunk is the test graph's own (its loopback missed a cycle under
        // the load of the tests beside it: one in about 300 chunks, seen twice), so two are allowed.
        let silent = arrivals.indices.dropFirst(5).filter { AudioAnalysis.rmsDbfs(arrivals[$0].chunk.samples) < -40 }
        #expect(silent.count <= 2, "silent chunks: \(silent) of \(arrivals.count)")
    }
}
