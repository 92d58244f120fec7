import CaptureLink
import Foundation
import Testing
import TestSupport

/// `livepush devices` against the test PipeWire daemon, and against none.
@Suite(.timeLimit(.minutes(10))) struct DevicesCommandTests {
    let livepush = BuiltProducts.path("livepush")

    @Test(.enabled(if: TestEnvironment.isEnabled(.pipewire), "needs the test PipeWire daemon (make test)"))
    func listsTheTestMicAsDefaultSourceAndTheDesktopSinkAsDefaultMonitor() throws {
        let microphone = try TestEnvironment.microphone()
        let desktop = try TestEnvironment.desktopSink()
        let result = try ProcessRunner.run(livepush, ["devices"])
        #expect(result.exitCode == 0, "\(result)")
        let lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // The daemon is shared: tests running meanwhile add virtual mics of their own (SignalMic,
        // `lp-vmic-...` and its `...-in` sink). Their lines are left out of the comparison, but their
        // names count in the padding: every name is padded to the longest one listed.
        func deviceName(_ line: String) -> String {
            String(line.dropFirst(2).prefix { $0 != " " })
        }
        let deviceLines = lines.filter { $0.hasPrefix("* ") || $0.hasPrefix("  ") }
        let width = try #require(deviceLines.map { deviceName($0).count }.max(), "no devices: \(result.standardOutput)")
        func listed(_ marker: String, _ name: String, _ description: String) -> String {
            marker + name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + description
        }
        let ours = lines.filter { !deviceName($0).hasPrefix("lp-") }
        #expect(ours.first == "Audio sources (--mic NAME; * = default):")
        #expect(ours.dropFirst().first == listed("* ", microphone, "LivePush test mic"), "\(result.standardOutput)")
        let monitorHeader = "Sink monitors (desktop audio; * = the default sink, which livepush-capture "
            + "--desktop-audio captures):"
        let monitorsAt = try #require(ours.firstIndex(of: monitorHeader), "\(result.standardOutput)")
        #expect(monitorsAt == 2, "exactly one source of the environment's before the monitors: \(result.standardOutput)")
        // The monitors run up to the next section's header (the cameras), which is not a device line.
        let monitors = Set(ours[(monitorsAt + 1)...].prefix { $0.hasPrefix("* ") || $0.hasPrefix("  ") })
        #expect(monitors == [
            listed("* ", desktop, "Monitor of LivePush test desktop"),
            listed("  ", "livepush-test-mic-in", "Monitor of LivePush test mic input"),
        ], "\(result.standardOutput)")
        #expect(result.standardError.isEmpty)
    }

    @Test func withoutADaemonItFailsNamingTheSocketAndTheFix() throws {
        let emptyRuntime = privateRuntimeDirectory()
        defer { rmdir(emptyRuntime) }
        let result = try ProcessRunner.run(livepush, ["devices"], environment: ["XDG_RUNTIME_DIR": emptyRuntime])
        #expect(result.exitCode == 1)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError == "livepush devices: cannot reach PipeWire: no PipeWire daemon at "
            + "\(emptyRuntime)/pipewire-0 (no socket there); start pipewire and wireplumber, or set XDG_RUNTIME_DIR "
            + "(or PIPEWIRE_REMOTE) to where they run\n")
    }

    @Test func rejectsAnUnexpectedArgument() throws {
        let result = try ProcessRunner.run(livepush, ["devices", "mic"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.hasPrefix("livepush devices: "))
    }
}

/// `livepush-capture --desktop-audio` against a pusher endpoint in the test: the default sink's
/// monitor (a 440 Hz tone in tools/testenv) arrives as AUDIO messages.
@Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.pipewire),
                "needs the test Xvfb and PipeWire daemon (make test)"), .timeLimit(.minutes(10)))
struct DesktopAudioHelperTests {
    /// Runs the helper on a small region with --desktop-audio until `enough` holds; returns its events and result.
    func runHelper(pipeWireRuntime: String, until enough: (CaptureLinkEvent) -> Bool,
                   timeoutSeconds: Double = 10) throws -> (events: [CaptureLinkEvent], result: CommandResult)
    {
        let runtime = privateRuntimeDirectory()
        let group = "desktop-audio"
        var configuration = PusherEndpointConfiguration(group: group)
        configuration.runtimeDirectory = runtime
        let recorder = EventRecorder()
        let endpoint = try PusherEndpoint(configuration: configuration) { recorder.record($0) }
        // The rendezvous lives in a private runtime directory; PipeWire's socket is found through
        // PIPEWIRE_RUNTIME_DIR, which libpipewire reads before XDG_RUNTIME_DIR.
        let helper = try ProcessRunner.start(BuiltProducts.path("livepush-capture"), [
            "--group", group, "--display", try TestEnvironment.display(), "--region", "0,0,64,64", "--fps", "5",
            "--desktop-audio", "--stats",
        ], environment: ["XDG_RUNTIME_DIR": runtime, "PIPEWIRE_RUNTIME_DIR": pipeWireRuntime])
        _ = recorder.wait(timeoutSeconds: timeoutSeconds, for: enough)
        endpoint.requestStop()
        let result = helper.finish()
        endpoint.stop()
        return (recorder.all, result)
    }

    @Test func desktopToneArrivesAsF32AudioIn20msChunksWhileCapturing() throws {
        let desktopHz = try TestEnvironment.desktopToneHz()
        let pipeWireRuntime = try TestEnvironment.value("XDG_RUNTIME_DIR", of: .pipewire)
        var audioCount = 0
        let (events, result) = try runHelper(pipeWireRuntime: pipeWireRuntime) { event in
            if case .audio = event { audioCount += 1 }
            return audioCount >= 75  // 1.5 s
        }
        #expect(result.exitCode == 0, "\(result)")
        #expect(events.compactMap(\.violation).isEmpty, "\(events.compactMap(\.violation))")
        guard case .connected(let helper)? = events.first(where: \.isConnected) else {
            Issue.record("the helper never connected: \(result)")
            return
        }
        #expect(helper.capabilities.contains(.audio))
        // AUDIO only after START (the pusher would report a STATE violation otherwise).
        let startedAt = try #require(events.firstIndex { $0.isStarted })
        let audio = events.enumerated().compactMap { index, event -> (Int, Audio)? in
            if case .audio(let audio) = event { return (index, audio) } else { return nil }
        }
        try #require(audio.count >= 75, "\(audio.count) AUDIO messages; helper said: \(result.standardError)")
        #expect(audio.allSatisfy { $0.0 > startedAt })
        let messages = audio.map(\.1)
        #expect(messages.allSatisfy { $0.format == .f32le && $0.channels == 2 && $0.rateHz == 48000 })
        #expect(messages.allSatisfy { $0.frameCount == 960 && $0.pcm.count == 960 * 2 * 4 })
        let steps = ChunkTimeline.problems(messages.map(\.ptsNs), chunkNs: 20_000_000)
        #expect(steps.isEmpty, "\(steps)")
        // Left channel of the PCM, decoded from F32LE bytes.
        var left: [Float] = []
        for message in messages {
            message.pcm.withUnsafeBytes { bytes in
                for frame in 0..<Int(message.frameCount) {
                    left.append(Float(bitPattern: bytes.loadUnaligned(fromByteOffset: frame * 8, as: UInt32.self)
                        .littleEndian))
                }
            }
        }
        let steady = Array(left.dropFirst(4800))
        #expect(AudioAnalysis.rmsDbfs(steady) > -30, "the desktop audio is silent")
        let measuredHz = AudioAnalysis.dominantFrequencyHz(steady, sampleRateHz: 48000)
        #expect(abs(measuredHz - desktopHz) <= 2, "\(measuredHz) Hz, expected the desktop tone \(desktopHz) Hz")
        #expect(result.standardError.contains("desktop audio from the monitor of '\(try TestEnvironment.desktopSink())'"))
    }

    @Test func withoutPipeWireTheHelperWarnsAndSendsVideoOnly() throws {
        let emptyRuntime = privateRuntimeDirectory()
        defer { rmdir(emptyRuntime) }
        var frames = 0
        let (events, result) = try runHelper(pipeWireRuntime: emptyRuntime) { event in
            if event.frame != nil { frames += 1 }
            return frames >= 3
        }
        #expect(result.exitCode == 0, "\(result)")
        #expect(frames >= 3, "video did not go on: \(result)")
        #expect(result.standardError.contains(
            "livepush-capture: warning: no desktop audio, video only: cannot reach PipeWire: no PipeWire daemon at "
                + "\(emptyRuntime)/pipewire-0 (no socket there)"), "\(result.standardError)")
        guard case .connected(let helper)? = events.first(where: \.isConnected) else {
            Issue.record("the helper never connected")
            return
        }
        #expect(!helper.capabilities.contains(.audio), "HELLO offered audio it cannot send")
        #expect(!events.contains { if case .audio = $0 { return true } else { return false } })
    }
}
