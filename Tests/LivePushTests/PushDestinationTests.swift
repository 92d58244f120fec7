import Foundation
import LivePush
import Testing

/// Push URLs of the three schemes, their redaction, and where they may come from.
@Suite(.timeLimit(.minutes(10))) struct PushDestinationTests {
    @Test func labelEqualsURLNamesADestinationAndTheFingerprintIsOfItsKey() throws {
        let written = try LabelledPushURL("studio=rtmp://h/live/key1?token=x")
        #expect(written.label == "studio" && written.url == "rtmp://h/live/key1?token=x")
        #expect(try LabelledPushURL("rtmp://h/live/k=1").label == nil, "an '=' after :// is the URL's")
        #expect(throws: PushURLError.self) { try LabelledPushURL("my key=rtmp://h/live/k") }
        #expect(throws: PushURLError.self) { try LabelledPushURL("=rtmp://h/live/k") }
        // RTMP: of the key with its query; SRT: of the stream id and the passphrase.
        #expect(try PushDestination("rtmp://h/live/abc").keyFingerprint == "ba7816")
        let one = try PushDestination("srt://h:9000?streamid=a&passphrase=0123456789ab")
        let two = try PushDestination("srt://h:9000?streamid=a&passphrase=0123456789ac")
        #expect(one.keyFingerprint != two.keyFingerprint)
    }

    @Test func srtURLsKeepTheirSettingsAndShowNoSecret() throws {
        let destination = try PushDestination("srt://ingest.example.invalid:9000?streamid=%23!::r=live/key1,m=publish"
            + "&passphrase=abcdefghijkl&latency=300")
        guard case .srt(let url) = destination else { Issue.record("not SRT: \(destination)"); return }
        #expect(url.host == "ingest.example.invalid" && url.port == 9000 && url.latencyMs == 300)
        #expect(url.streamID == "#!::r=live/key1,m=publish" && url.passphrase == "abcdefghijkl")
        #expect(destination.description == "srt://ingest.example.invalid:9000?streamid=****&passphrase=****&latency=300")
    }

    @Test func srtLatencyDefaultsTo120Ms() throws {
        #expect(try PushDestination("srt://127.0.0.1:9000").description == "srt://127.0.0.1:9000?latency=120")
    }

    @Test(arguments: [
        ("srt://host?streamid=k", "the SRT URL needs a port: srt://host:port (SRT has no default port)"),
        ("srt://host:9000?passphrase=short", "the SRT passphrase has 5 characters; it needs 10 to 79"),
        ("srt://host:9000?latency=5", "latency '5' is not a number of ms from 20 to 8000"),
        ("srt://host:9000?mode=listener", "mode 'listener' is not supported: LivePush connects to the server (mode=caller, the default)"),
        ("srt://host:9000?key=secret", "unknown SRT URL parameter 'key'; the parameters are streamid, passphrase, latency and mode"),
        ("rtmp://user:PASSWORD@host/live/key", "the URL has a user name or password before the host (rtmp://****@host/...), "
            + "which RTMP does not take there; use the stream key your server gives (rtmp://host/app/KEY), or the query it documents"),
        ("rtmps://PASSWORD@host:443/live/key", "the URL has a user name or password before the host (rtmp://****@host/...), "
            + "which RTMP does not take there; use the stream key your server gives (rtmp://host/app/KEY), or the query it documents"),
        ("srt://user:PASSWORD@host:9000?streamid=k", "the SRT URL has a user name or password before the host "
            + "(srt://****@host:port); put the secret in passphrase=... (and the stream's name in streamid=...)"),
        ("ftp://host/app/key", "'ftp' is not a push URL; use rtmp://host[:port]/app/key, rtmps://host[:port]/app/key or srt://host:port?streamid=..."),
    ])
    func badURLsSayWhatIsWrongWithoutTheSecret(text: String, reason: String) {
        #expect(throws: PushURLError(reason: reason)) { try PushDestination(text) }
    }

    @Test func theEnvironmentHoldsSeveralURLsSeparatedBySpaces() {
        let urls = PushURLSources.fromEnvironment(["LIVEPUSH_URL": " rtmp://a/live/k1  srt://b:9000?streamid=s "])
        #expect(urls == ["rtmp://a/live/k1", "srt://b:9000?streamid=s"])
        #expect(PushURLSources.fromEnvironment([:]).isEmpty)
    }

    @Test func aURLFileSkipsCommentsAndBlankLinesAndMustBePrivate() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lp-urls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data("# mine\n\nrtmps://a/live/k1\n  srt://b:9000?passphrase=0123456789  \n".utf8)
            .write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        #expect(try PushURLSources.fromFile(path) == ["rtmps://a/live/k1", "srt://b:9000?passphrase=0123456789"])
        chmod(path, 0o640)
        #expect(throws: PushURLError(reason: "the URL file '\(path)' is readable by group or others (mode 640); it holds "
            + "stream keys: make it private with 'chmod 600 \(path)'")) { try PushURLSources.fromFile(path) }
        chmod(path, 0o600)
        try Data("just-a-key\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: PushURLError(reason: "line 1 of the URL file '\(path)' is not a URL (scheme://...); its text is "
            + "not shown, it may be a key")) { try PushURLSources.fromFile(path) }
        #expect(throws: PushURLError(reason: "the URL file '/nonexistent/urls' does not exist")) {
            try PushURLSources.fromFile("/nonexistent/urls")
        }
    }
}
