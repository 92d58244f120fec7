import Foundation
import Testing
import TestSupport

/// What an RTMP server says (an `_error` answer to connect, an `onStatus` refusal of publish) is a
/// stranger's text too (SPEC §2.3's rule, applied to servers): livepush shows it with its control
/// characters escaped, on the terminal, in the events and in the session report. The server is
/// Tests/Fixtures/refusing_rtmp_server.py (nginx-rtmp's descriptions are fixed texts); the pusher
/// takes its pictures from a group no helper joins (black), so no X server is needed.
@Suite(.timeLimit(.minutes(10))) struct ServerTextTests {
    let livepush = BuiltProducts.path("livepush")

    @Test(arguments: [("connect", "the server refused the application 'app': NetConnection.Connect.Rejected"),
                      ("publish", "the server refused to publish (NetStream.Publish.Failed")])
    func aServersRefusalIsShownWithItsEscapesNeutralised(mode: String, refusal: String) throws {
        let server = try ProcessRunner.start("python3", [Repository.path("Tests/Fixtures/refusing_rtmp_server.py"),
                                                         "--mode", mode])
        defer { if server.isRunning { server.interrupt() } }
        let line = try #require(server.waitForLine(startingWith: "listening ", timeoutSeconds: 30), "\(server.errorSoFar)")
        let port = String(line.dropFirst("listening ".count))
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("server-text")).path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let events = work + "/events.jsonl", report = work + "/report.html"
        let result = try ProcessRunner.run(livepush, [
            "push", "--group", UniqueName.make("server-text"), "rtmp://127.0.0.1:\(port)/app/secretkey",
            "--no-mic", "--resolution", "320x240", "--quiet", "--duration", "3", "--events", events, "--report", report,
        ], timeoutSeconds: 60)
        let escaped = #"\x1b[2J\x1b]0;owned by a server\x07"#
        #expect(result.standardError.contains(refusal + escaped), "\(result)")
        #expect(!result.standardError.utf8.contains(0x1B) && !result.standardError.utf8.contains(0x07),
                "raw ESC or BEL in stderr: \(result)")
        for path in [events, report] {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(!bytes.isEmpty && !bytes.contains(0x1B) && !bytes.contains(0x07), "raw ESC or BEL in \(path)")
            #expect(!String(decoding: bytes, as: UTF8.self).contains("secretkey"), "the key in \(path)")
        }
        #expect(try String(contentsOfFile: events, encoding: .utf8).contains(refusal), "the refusal is not in the events")
        #expect(!result.standardError.contains("secretkey") && !result.standardOutput.contains("secretkey"))
        _ = server.finish()
    }
}
