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
        #expect(lines.last == "All checks passed.")
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
