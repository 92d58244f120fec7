import Foundation
import Testing
import TestSupport

/// Issue 35 item 3: what a command line names is checked before anything starts. Each mistake is refused
/// with exit 2 and a message that says what is wrong and what to do (a "did you mean" where a near name
/// exists), before the run starts (no control socket announced, no recording made, nothing at nginx).
@Suite(.enabled(if: TestEnvironment.isEnabled(.pipewire) && TestEnvironment.isEnabled(.rtmp)
                    && TestEnvironment.isEnabled(.x11), "needs the test PipeWire, nginx-rtmp and Xvfb (make test)"),
       .timeLimit(.minutes(10)))
struct StartChecksTests {
    let livepush = BuiltProducts.path("livepush")

    private func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("start")).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs `livepush WORDS`, expects exit 2 before the start, and returns stderr.
    private func refused(_ words: [String], output: String? = nil) throws -> String {
        let result = try ProcessRunner.run(livepush, words + ["--display", try TestEnvironment.display(), "--quiet",
                                                              "--duration", "3"], timeoutSeconds: 30)
        #expect(result.exitCode == 2, "\(words): \(result)")
        #expect(!result.standardError.contains("livepush: control:"), "refused before the start: \(result)")
        #expect(!result.standardError.contains("connecting to"), "no push was tried: \(result)")
        if let output { #expect(!FileManager.default.fileExists(atPath: output), "nothing recorded: \(output)") }
        return result.standardError
    }

    @Test func aMicrophoneNamedByItsDescriptionIsRefusedWithTheNodeName() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let output = dir + "/talk.mkv"
        let mic = try TestEnvironment.microphone()
        let byDescription = try refused(["screen", "--mic", "LivePush test mic", output], output: output)
        #expect(byDescription.contains("'LivePush test mic' is the description of \(mic); --mic takes the node name; "
            + "did you mean \(mic)?"), "\(byDescription)")
        let typo = try refused(["screen", "--mic", "livepush-test-mik", output], output: output)
        #expect(typo.contains("no audio source is named 'livepush-test-mik'; did you mean \(mic)?"), "\(typo)")
    }

    @Test func missingMusicWatermarkAndPicturesAreRefusedBeforeTheStart() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let output = dir + "/talk.mkv"
        FileManager.default.createFile(atPath: dir + "/music.mp3", contents: Data([0]))
        let music = try refused(["screen", "--bgm", dir + "/musik.mp3", output], output: output)
        #expect(music.contains("the background music file '\(dir)/musik.mp3' does not exist: give an MP3, M4A, FLAC, "
            + "Ogg, Opus or WAV file; did you mean '\(dir)/music.mp3'?"), "\(music)")
        let watermark = try refused(["screen", "--watermark", dir + "/nosuch.png@0.8,0.05,0.15,0.7", output],
                                    output: output)
        #expect(watermark.contains("the watermark file '\(dir)/nosuch.png' does not exist: give a PNG or JPEG file"),
                "\(watermark)")
        let pause = try refused(["screen", "--pause-image", dir, output], output: output)
        #expect(pause.contains("is a directory, not a regular file"), "\(pause)")
    }

    @Test func aRecordingInAMissingDirectoryIsCalledMissing() throws {
        let screen = try refused(["screen", "/nonexistent/dir/talk.mp4"])
        #expect(screen.contains("the directory '/nonexistent' does not exist: create it (mkdir -p '/nonexistent/dir')"),
                "\(screen)")
        #expect(!screen.contains("permission"), "\(screen)")
        let push = try refused(["push", try TestEnvironment.recordURL(key: UniqueName.make("never")), "--record",
                                "/nonexistent/dir/talk.mp4"])
        #expect(push.contains("invalid value '/nonexistent/dir/talk.mp4' for '--record': the directory '/nonexistent' "
            + "does not exist"), "\(push)")
    }

    @Test func wrongURLSchemesAreRefusedWithASuggestionAndNoKey() throws {
        let key = UniqueName.make("secretkey")
        let swapped = try refused(["push", "rmtp://127.0.0.1/live/\(key)"])
        #expect(swapped.contains("invalid argument 'rmtp://...': 'rmtp' is not a push scheme; did you mean rtmp://?"),
                "\(swapped)")
        let web = try refused(["push", "http://127.0.0.1/live/\(key)"])
        #expect(web.contains("'http://' is a web address, not a push URL"), "\(web)")
        let oneSlash = try refused(["push", "rtmp:/127.0.0.1/live/\(key)"])
        #expect(oneSlash.contains("a push URL starts with rtmp:// (two slashes)"), "\(oneSlash)")
        #expect(!oneSlash.contains("--URL") && !oneSlash.contains("--record"), "\(oneSlash)")
        let inScreen = try refused(["screen", "rtmp:/127.0.0.1/live/\(key)"])
        #expect(inScreen.contains("a push URL starts with rtmp:// (two slashes)"), "\(inScreen)")
        for text in [swapped, web, oneSlash, inScreen] { #expect(!text.contains(key), "no key: \(text)") }
    }

    /// A web server where the RTMP server should be: the handshake's first byte is 'H'. The failure is
    /// printed once (before: the error, "gave up on", and the summary).
    @Test func anHTTPServerAtAnRTMPURLIsNamedAndTheFailureIsPrintedOnce() throws {
        let port = try TestEnvironment.value("LIVEPUSH_TEST_HTTP_PORT", of: .rtmp)
        let result = try ProcessRunner.run(livepush, [
            "push", "rtmp://127.0.0.1:\(port)/live/\(UniqueName.make("k"))", "--display", try TestEnvironment.display(),
            "--no-mic", "--quiet", "--duration", "10", "--retry-count", "0",
        ], timeoutSeconds: 30)
        #expect(result.exitCode == 1, "\(result)")
        #expect(result.standardError.contains("the server at 127.0.0.1:\(port) answered HTTP, not RTMP: check the host "
            + "and port (RTMP's is 1935)"), "\(result)")
        let mentions = result.standardError.components(separatedBy: "127.0.0.1:\(port)/live/****").count - 1
        #expect(mentions == 2, "'connecting to' and the error, nothing else: \(result.standardError)")
        #expect(result.standardError.components(separatedBy: "answered HTTP").count - 1 == 1, "\(result.standardError)")
    }

    @Test func aMistypedControlVerbGetsDidYouMean() throws {
        let result = try ProcessRunner.run(livepush, ["ctl", "nobody", "pasue"], timeoutSeconds: 10)
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.standardError.contains("unknown command 'pasue'; did you mean 'pause'? use one of: status, pause"),
                "\(result)")
    }
}
