import AudioCapture
import Foundation
import LinuxSystem
import PipeWireCore
import Testing
import TestSupport

/// Everything a capture delivered, gathered from PipeWire's thread.
final class CaptureRecorder: @unchecked Sendable {
    struct Arrival {
        let chunk: PCMChunk
        /// CLOCK_MONOTONIC when onChunk ran.
        let arrivedNs: UInt64
    }

    private let lock = NSLock()
    private var arrivals: [Arrival] = []
    private var events: [AudioCaptureEvent] = []

    func record(_ chunk: PCMChunk) {
        let now = monotonicNowNs()
        lock.withLock { arrivals.append(Arrival(chunk: chunk, arrivedNs: now)) }
    }

    func record(_ event: AudioCaptureEvent) { lock.withLock { events.append(event) } }

    var chunks: [Arrival] { lock.withLock { arrivals } }
    var chunkCount: Int { lock.withLock { arrivals.count } }
    var eventList: [AudioCaptureEvent] { lock.withLock { events } }

    func capture(_ settings: AudioCaptureSettings) throws -> PipeWireAudioCapture {
        try PipeWireAudioCapture(settings: settings, onChunk: { self.record($0) }, onEvent: { self.record($0) })
    }

    /// Waits until `condition` holds, up to `timeoutSeconds`; true if it did.
    func wait(timeoutSeconds: Double, until condition: (CaptureRecorder) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            if condition(self) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition(self)
    }
}

func monotonicNowNs() -> UInt64 { MonotonicClock.nowNs() }

/// Channel `channel` of interleaved chunks, concatenated.
func channel(_ channel: Int, of chunks: [PCMChunk]) -> [Float] {
    chunks.flatMap { chunk in stride(from: channel, to: chunk.samples.count, by: chunk.channels).map { chunk.samples[$0] } }
}

@Suite(.enabled(if: TestEnvironment.isEnabled(.pipewire), "needs the test PipeWire daemon (make test)"), .timeLimit(.minutes(10)))
struct PipeWireAudioCaptureTests {
    @Test func oneSecondFromTheTestMicHoldsItsToneInExact20msChunks() throws {
        var settings = AudioCaptureSettings()
        settings.target = try TestEnvironment.microphone()
        let toneHz = try TestEnvironment.toneHz()
        let recorder = CaptureRecorder()
        let capture = try recorder.capture(settings)
        #expect(capture.sampleRate == 48000, "the test graph runs at 48 kHz")
        // 1 s of audio after the first chunk: 50 chunks.
        let gotSecond = recorder.wait(timeoutSeconds: 5) { $0.chunkCount >= 51 }
        capture.stop()
        let arrivals = recorder.chunks
        try #require(gotSecond, "only \(arrivals.count) chunks in 5 s")
        #expect(recorder.eventList.first == .firstChunk)

        for arrival in arrivals {
            #expect(arrival.chunk.sampleRate == 48000)
            #expect(arrival.chunk.channels == 2)
            #expect(arrival.chunk.frameCount == 960, "20 ms at 48 kHz")
            #expect(arrival.chunk.samples.count == 1920)
            // Captured before it arrived, and not long before (PipeWire's quantum is ~21 ms).
            #expect(arrival.chunk.ptsNs <= arrival.arrivedNs)
            #expect(arrival.arrivedNs - arrival.chunk.ptsNs < 250_000_000,
                    "chunk arrived \(Double(arrival.arrivedNs - arrival.chunk.ptsNs) / 1e6) ms after its pts")
        }
        // One sample-exact timeline: consecutive chunks 20 ms apart (within 1 ms), but for at
        // most one forward re-anchor (a graph xrun on a loaded machine).
        let steps = ChunkTimeline.problems(arrivals.map(\.chunk.ptsNs), chunkNs: 20_000_000)
        #expect(steps.isEmpty, "\(steps)")
        let chunks = arrivals.map(\.chunk)
        // Skip the first 100 ms, where the stream is still being linked.
        for channelIndex in 0..<2 {
            let steady = Array(channel(channelIndex, of: chunks).dropFirst(4800))
            #expect(AudioAnalysis.rmsDbfs(steady) > -30, "channel \(channelIndex) is silent")
            let measuredHz = AudioAnalysis.dominantFrequencyHz(steady, sampleRateHz: 48000)
            #expect(abs(measuredHz - toneHz) <= 2, "channel \(channelIndex): \(measuredHz) Hz, expected \(toneHz) Hz")
        }
        // The desktop tone plays on another sink and must not reach the mic (40 dB below its own).
        let left = Array(channel(0, of: chunks).dropFirst(4800))
        let desktopHz = try TestEnvironment.desktopToneHz()
        let leak = AudioAnalysis.tonePower(left, frequencyHz: desktopHz, sampleRateHz: 48000)
            / AudioAnalysis.tonePower(left, frequencyHz: toneHz, sampleRateHz: 48000)
        #expect(leak < 1e-4, "the \(desktopHz) Hz desktop tone is in the mic at \(10 * log10(leak)) dB")
    }

    @Test func askedRateChannelsAndChunkLengthAreDelivered() throws {
        var settings = AudioCaptureSettings()
        settings.target = try TestEnvironment.microphone()
        settings.sampleRate = 16000
        settings.channels = 1
        settings.chunkMs = 10
        let toneHz = try TestEnvironment.toneHz()
        let recorder = CaptureRecorder()
        let capture = try recorder.capture(settings)
        #expect(capture.sampleRate == 16000)
        let enough = recorder.wait(timeoutSeconds: 5) { $0.chunkCount >= 60 }
        capture.stop()
        try #require(enough)
        let chunks = recorder.chunks.map(\.chunk)
        #expect(chunks.allSatisfy { $0.frameCount == 160 && $0.channels == 1 && $0.sampleRate == 16000 })
        let steady = Array(channel(0, of: chunks).dropFirst(1600))
        let measuredHz = AudioAnalysis.dominantFrequencyHz(steady, sampleRateHz: 16000)
        #expect(abs(measuredHz - toneHz) <= 2, "\(measuredHz) Hz, expected \(toneHz) Hz")
    }

    @Test func noTargetCapturesTheDefaultSourceWhichIsTheTestMic() throws {
        let recorder = CaptureRecorder()
        let capture = try recorder.capture(AudioCaptureSettings())
        #expect(capture.sourceName == nil)
        let enough = recorder.wait(timeoutSeconds: 5) { $0.chunkCount >= 40 }
        capture.stop()
        try #require(enough)
        let steady = Array(channel(0, of: recorder.chunks.map(\.chunk)).dropFirst(4800))
        let measuredHz = AudioAnalysis.dominantFrequencyHz(steady, sampleRateHz: Double(capture.sampleRate))
        #expect(abs(measuredHz - (try TestEnvironment.toneHz())) <= 2, "\(measuredHz) Hz")
    }

    @Test func desktopAudioIsTheDefaultSinksMonitorWithItsOwnTone() throws {
        var settings = AudioCaptureSettings()
        settings.captureSinkMonitor = true
        let recorder = CaptureRecorder()
        let capture = try recorder.capture(settings)
        #expect(capture.sourceName == (try TestEnvironment.desktopSink()))
        let enough = recorder.wait(timeoutSeconds: 5) { $0.chunkCount >= 40 }
        capture.stop()
        try #require(enough)
        let steady = Array(channel(0, of: recorder.chunks.map(\.chunk)).dropFirst(4800))
        #expect(AudioAnalysis.rmsDbfs(steady) > -30, "the desktop monitor is silent")
        let measuredHz = AudioAnalysis.dominantFrequencyHz(steady, sampleRateHz: Double(capture.sampleRate))
        let desktopHz = try TestEnvironment.desktopToneHz()
        #expect(abs(measuredHz - desktopHz) <= 2, "\(measuredHz) Hz, expected the desktop tone \(desktopHz) Hz")
        // The mic's tone plays into the mic's own sink only, never into the default one.
        let micHz = try TestEnvironment.toneHz()
        let rate = Double(capture.sampleRate)
        let leak = AudioAnalysis.tonePower(steady, frequencyHz: micHz, sampleRateHz: rate)
            / AudioAnalysis.tonePower(steady, frequencyHz: desktopHz, sampleRateHz: rate)
        #expect(leak < 1e-4, "the \(micHz) Hz mic tone is on the desktop sink at \(10 * log10(leak)) dB")
    }

    @Test func listSourcesShowsTheTestMicAsTheDefaultSourceAndTheDesktopSinkMonitor() throws {
        let microphone = try TestEnvironment.microphone()
        let sources = try AudioDevices.listSources()
        let mic = try #require(sources.first { $0.name == microphone }, "\(sources)")
        #expect(mic.isDefault)
        #expect(!mic.isMonitor)
        #expect(mic.description == "LivePush test mic")
        #expect(sources.filter { $0.isDefault && !$0.isMonitor }.map(\.name) == [microphone])

        let desktop = try #require(sources.first { $0.name == (try? TestEnvironment.desktopSink()) }, "\(sources)")
        #expect(desktop.isMonitor)
        #expect(desktop.isDefault, "the desktop sink is the default sink")
        #expect(desktop.description == "Monitor of LivePush test desktop")
        // The mic's input sink is a sink too, and not the default one.
        let micInput = try #require(sources.first { $0.name == "livepush-test-mic-in" })
        #expect(micInput.isMonitor && !micInput.isDefault)
    }

    @Test func unknownTargetFailsWithTheNamesThatExist() throws {
        var settings = AudioCaptureSettings()
        settings.target = "no-such-mic"
        do {
            _ = try PipeWireAudioCapture(settings: settings, onChunk: { _ in }, onEvent: { _ in })
            Issue.record("capture of a missing source started")
        } catch {
            guard case .sourceNotFound(let name, let available) = error else {
                Issue.record("expected sourceNotFound, got \(error)")
                return
            }
            #expect(name == "no-such-mic")
            #expect(available.contains(try TestEnvironment.microphone()))
            #expect(available.contains(try TestEnvironment.desktopSink()))
            #expect(error.description.contains("no audio source named 'no-such-mic'"))
            #expect(error.description.contains(try TestEnvironment.microphone()))
        }
    }

    @Test func noDaemonAtTheSocketIsReportedWithItsPath() throws {
        let emptyDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("no-pw"))
        try FileManager.default.createDirectory(at: emptyDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: emptyDirectory) }
        let socket = emptyDirectory.appendingPathComponent("pipewire-0").path
        var settings = AudioCaptureSettings()
        settings.remote = socket
        #expect(throws: AudioCaptureError.self) {
            _ = try PipeWireAudioCapture(settings: settings, onChunk: { _ in }, onEvent: { _ in })
        }
        do {
            _ = try AudioDevices.listSources(remote: socket)
            Issue.record("listed sources without a daemon")
        } catch {
            guard case .pipeWire(let connectionError) = error, case .noDaemon = connectionError else {
                Issue.record("expected noDaemon, got \(error)")
                return
            }
            let detail = connectionError.description
            #expect(detail.contains(socket))
            #expect(detail.contains("no socket there"))
            #expect(error.description.contains("start pipewire"))
        }
    }

    @Test func aNamedSourceThatGoesAwayIsReportedAndCaptureResumesWhenItReturns() throws {
        let name = UniqueName.make("lp-src")
        func startSource() throws -> RunningCommand {
            try ProcessRunner.start("pw-loopback", [
                "--name", name + "-loopback",
                "--capture-props=media.class=Audio/Sink node.name=\(name)-in priority.session=0",
                "--playback-props=media.class=Audio/Source node.name=\(name) priority.session=0",
            ])
        }
        func sourceExists() -> Bool { ((try? AudioDevices.listSources()) ?? []).contains { $0.name == name } }
        func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if condition() { return true }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return condition()
        }

        var source = try startSource()
        defer {
            if source.isRunning { source.interrupt() }
            _ = source.finish()
        }
        try #require(waitFor(5, sourceExists), "pw-loopback did not create \(name)")
        var settings = AudioCaptureSettings()
        settings.target = name
        let recorder = CaptureRecorder()
        let capture = try recorder.capture(settings)
        defer { capture.stop() }
        try #require(recorder.wait(timeoutSeconds: 5) { $0.chunkCount >= 10 }, "no chunks from \(name)")

        source.interrupt()
        _ = source.finish()
        try #require(recorder.wait(timeoutSeconds: 5) { $0.eventList.contains(.sourceLost(name)) },
                     "no sourceLost: \(recorder.eventList)")
        let countWhenLost = recorder.chunkCount
        Thread.sleep(forTimeInterval: 0.3)  // let it run: 0.3 s watched for chunks (15 would come from a live source)
        #expect(recorder.chunkCount == countWhenLost, "chunks kept coming from a source that is gone")

        source = try startSource()
        try #require(recorder.wait(timeoutSeconds: 5) { $0.eventList.contains(.sourceReturned(name)) },
                     "no sourceReturned: \(recorder.eventList)")
        #expect(recorder.wait(timeoutSeconds: 5) { $0.chunkCount >= countWhenLost + 10 },
                "chunks did not resume: \(recorder.chunkCount) after \(countWhenLost)")
        #expect(recorder.eventList == [.firstChunk, .sourceLost(name), .sourceReturned(name)])
        // The timeline re-anchored after the gap: pts still increase.
        let pts = recorder.chunks.map(\.chunk.ptsNs)
        #expect(zip(pts, pts.dropFirst()).allSatisfy { $0 < $1 })
    }
}
