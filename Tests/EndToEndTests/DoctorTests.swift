import Testing
import TestSupport

@Suite(.timeLimit(.minutes(10))) struct DoctorTests {
    let livepush = BuiltProducts.path("livepush")

    @Test(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.pipewire)))
    func everyCheckPassesInTheTestEnvironment() throws {
        let display = try TestEnvironment.display()
        let size = try TestEnvironment.screenSize()
        let result = try ProcessRunner.run(livepush, ["doctor", "--display", display])
        #expect(result.exitCode == 0, "\(result)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.contains(
            "ok   X11 \(display): \(size.width)x\(size.height) depth 24, MIT-SHM 1.2, zero-copy capture available"))
        #expect(lines.contains { $0.hasPrefix("ok   PipeWire: daemon pipewire-0 ") })
        #expect(lines.contains("ok   H.264 encoder libx264: built into libavcodec"))
        // The libraries loaded on first use (issue 22), each with what needs it.
        #expect(lines.contains(
            "ok   libavformat.so.59 (recordings, SRT, music and picture files): loaded when first needed"))
        #expect(lines.contains("ok   libmicrohttpd.so.12 (the dashboard): loaded when first needed"))
        let mic = try TestEnvironment.microphone()
        #expect(lines.contains { $0.hasPrefix("ok   Microphone: \(mic) (LivePush test mic), the default") },
                "\(result.standardOutput)")
        // The last line is the worst finding's (the preset trial may warn on a loaded machine).
        let warned = lines.contains { $0.hasPrefix("WARN ") }
        #expect(lines.last == (warned ? "WARN 1 warning; no check failed." : "ok   All checks passed."),
                "\(result.standardOutput)")
    }

    /// Issue 35 item 8: a WARN is never followed by "All checks passed". A preset no machine here keeps
    /// up with (medium at 1080p60, on 2 cores) warns; the last line says WARN and the run exits 0.
    @Test(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.pipewire)))
    func aWarningIsTheLastLinesWordAndNothingSaysAllPassed() throws {
        let result = try ProcessRunner.run(livepush, ["doctor", "--display", try TestEnvironment.display(),
                                                      "--resolution", "1920x1080", "--fps", "60", "--preset", "medium"],
                                           timeoutSeconds: 180)
        #expect(result.exitCode == 0, "a warning is not a failure: \(result)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        // "medium cannot keep up ...; superfast does", or on a loaded machine "not even ultrafast keeps up".
        #expect(lines.contains { $0.hasPrefix("WARN x264 preset medium cannot keep up at 1920x1080 60 fps")
                    || $0.hasPrefix("WARN x264 preset trial: not even ultrafast keeps up at 1920x1080 60 fps") },
                "\(result.standardOutput)")
        #expect(lines.last == "WARN 1 warning; no check failed.", "\(result.standardOutput)")
        #expect(!result.standardOutput.contains("All checks passed"), "\(result.standardOutput)")
    }

    /// A PipeWire without a microphone (the Wayland test desktop's: no audio source at all) is a warning
    /// that says what to do.
    @Test(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.wayland)))
    func aPipeWireWithoutAMicrophoneIsAWarning() throws {
        let remote = try TestEnvironment.value("LIVEPUSH_TEST_WAYLAND_PIPEWIRE", of: .wayland)
        let result = try ProcessRunner.run(livepush, ["doctor", "--display", try TestEnvironment.display(),
                                                      "--resolution", "320x240", "--fps", "10", "--preset", "ultrafast"],
                                           environment: ["PIPEWIRE_REMOTE": remote], timeoutSeconds: 120)
        #expect(result.exitCode == 0, "\(result)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("ok   PipeWire: ") }, "\(result.standardOutput)")
        #expect(lines.contains("WARN Microphone: none: PipeWire offers no audio source, so a broadcast would carry "
            + "silence; plug in or enable a microphone (wpctl status shows what WirePlumber sees), or broadcast with "
            + "--no-mic"), "\(result.standardOutput)")
        #expect(lines.last == "WARN 1 warning; no check failed.", "\(result.standardOutput)")
    }

    @Test func unreachableDisplayFailsTheCheckAndSaysWhy() throws {
        let result = try ProcessRunner.run(livepush, ["doctor", "--display", ":4998"])
        #expect(result.exitCode == 1)
        #expect(result.standardOutput.contains(
            "FAIL X11: cannot open X display ':4998': no X server answers there"))
    }

    @Test func doctorRejectsAnUnknownOption() throws {
        let result = try ProcessRunner.run(livepush, ["doctor", "--dispaly", ":1"])
        #expect(result.exitCode == 2)
        #expect(result.standardError.hasPrefix("livepush doctor: unknown option '--dispaly'; did you mean '--display'?"))
    }

    /// The trial encode at the size, rate and preset asked for: each preset tried is reported with
    /// the time its two seconds took, then a verdict naming a preset.
    @Test func presetTrialEncodesAtTheConfiguredSizeAndNamesAPreset() throws {
        let result = try ProcessRunner.run(livepush, ["doctor", "--display", ":4998", "--resolution", "640x360",
                                                      "--fps", "25", "--preset", "faster"], timeoutSeconds: 120)
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        let trials = lines.filter { $0.hasPrefix("     x264 preset ") }
        #expect(trials.first?.hasPrefix("     x264 preset faster at 640x360 25 fps: 2 s of moving picture in ") == true,
                "\(result.standardOutput)")
        let verdict = try #require(lines.first { $0.contains("x264 preset") && !$0.hasPrefix("     ") },
                                   "\(result.standardOutput)")
        let named = verdict.hasPrefix("ok   x264 preset faster keeps up at 640x360 25 fps; the slowest that does here: ")
            || verdict.hasPrefix("WARN x264 preset faster cannot keep up at 640x360 25 fps")
            || verdict.hasPrefix("WARN x264 preset trial: not even ultrafast keeps up at 640x360 25 fps")
        #expect(named, "\(verdict)")
    }

    @Test func presetTrialRefusesAnUnknownPreset() throws {
        let result = try ProcessRunner.run(livepush, ["doctor", "--preset", "placebo"])
        #expect(result.exitCode == 1)
        #expect(result.standardOutput.contains("FAIL x264 preset trial: --preset 'placebo' is not ultrafast, superfast, "
            + "veryfast, faster, fast or medium"), "\(result.standardOutput)")
    }
}
