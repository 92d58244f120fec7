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
}
