import AudioCapture
import Foundation
import PipeWireCore
import Testing
import TestSupport

@Suite(.enabled(if: TestEnvironment.isEnabled(.pipewire), "needs the test PipeWire daemon (make test)"), .timeLimit(.minutes(10)))
struct PipeWireProbeTests {
    @Test func contextConnectsToTheTestDaemonAndItAnswers() throws {
        _ = try TestEnvironment.microphone()
        let info = try PipeWireProbe.serverInfo()
        #expect(info.name == "pipewire-0")
        // The daemon and our library come from the same Debian package.
        #expect(info.version == info.libraryVersion)
        #expect(info.version.hasPrefix("0.3.") || info.version.hasPrefix("1."))
    }

    @Test func missingSocketIsNamedInTheError() throws {
        let runtimeDirectory = try TestEnvironment.value("XDG_RUNTIME_DIR", of: .pipewire)
        let socket = runtimeDirectory + "/no-such-pipewire"
        #expect(throws: PipeWireConnectionError.noDaemon(socket: socket, socketExists: false)) {
            try PipeWireProbe.serverInfo(remote: socket)
        }
    }
}
