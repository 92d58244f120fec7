import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// `livepush screen FILE --record-quality ...` with no destination: only the recording's own
    /// encode runs (the live encode's packets would go nowhere). Seen in the statistics: the live
    /// encode's bitrate stays 0 while pictures go on at the frame rate, and the file is the CRF
    /// encode. How much CPU that saves is a benchmark figure (docs/benchmarks.md).
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11), "needs the test Xvfb (make test)"), .timeLimit(.minutes(10)))
    struct RecordingOnlyEncodeTests {
        let livepush = BuiltProducts.path("livepush")

        /// The statistics lines of a 4 s `livepush screen` of the painted square into `file`.
        private func record(_ file: String, _ options: [String]) throws -> [[String: Any]] {
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "screen", file, "--display", try TestEnvironment.display(), "--region", "400,100,320,240",
                "--resolution", "320x240", "--fps", "30", "--duration", "4", "--quiet",
            ] + options)
            let deadline = Date().addingTimeInterval(60)
            while broadcast.command.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            let result = broadcast.command.finish(timedOut: broadcast.command.isRunning)
            #expect(result.exitCode == 0, "\(result)")
            return broadcast.events.filter { $0["type"] as? String == "statistics" }
        }

        @Test func withARecordingOfItsOwnQualityAndNoDestinationOnlyTheRecordingEncodes() throws {
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+400+100", "square", "102030", "f0c040",
                                                     "60", "4"])
            defer { painter.closeInput(); _ = painter.finish() }
            let base = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("reconly")).path
            let own = base + "-crf.mkv", live = base + "-live.mkv"
            defer { [own, live].forEach { try? FileManager.default.removeItem(atPath: $0) } }

            let ownStatistics = try record(own, ["--record-quality", "crf=30,preset=ultrafast"])
            let liveStatistics = try record(live, [])
            // The lines from the second on (the first second holds the start).
            let ownSeconds = ownStatistics.dropFirst(), liveSeconds = liveStatistics.dropFirst()
            try #require(ownSeconds.count >= 2 && liveSeconds.count >= 2, "\(ownStatistics) \(liveStatistics)")
            #expect(ownSeconds.allSatisfy { $0["videoBitrateKbps"] as? Int == 0 },
                    "no live encode: \(ownSeconds.map { $0["videoBitrateKbps"] ?? "-" })")
            #expect(ownSeconds.allSatisfy { ($0["fps"] as? Int ?? 0) >= 20 },
                    "pictures at the frame rate: \(ownSeconds.map { $0["fps"] ?? "-" })")
            // Without --record-quality the recording is the live encode, which runs.
            #expect(liveSeconds.allSatisfy { ($0["videoBitrateKbps"] as? Int ?? 0) > 0 },
                    "\(liveSeconds.map { $0["videoBitrateKbps"] ?? "-" })")

            // The recording is the CRF encode, whole and clean.
            let options = try X264Options.read(own)
            #expect(options["rc"] == "crf" && options["crf"] == "30.0", "\(options)")
            #expect(try MediaProbe.decodeErrors(own).isEmpty)
            let frames = try MediaProbe.decodedFrameCount(own)
            #expect((95...130).contains(frames), "\(frames) frames of about 120")
        }
    }
}
