import Foundation
import SafeText
import Testing

/// The one rule that masks stream keys, SRT secrets and passwords in every output (issues 30, 31).
@Suite struct RedactionTests {
    @Test func keysAreRedactedFromEveryURLInAText() {
        #expect(Redaction.redact("push to rtmp://example.com:1935/live/secret123 failed")
            == "push to rtmp://example.com:1935/live/**** failed")
        #expect(Redaction.redact("rtmp://h/live/****") == "rtmp://h/live/****")
        #expect(Redaction.redact("no url here") == "no url here")
    }

    @Test func everyQueryValueIsHiddenButSRTsLatencyAndMode() {
        #expect(Redaction.redact("srt://h:9000?streamid=x&passphrase=p") == "srt://h:9000?streamid=****&passphrase=****")
        #expect(Redaction.redactURL("srt://h:9000?streamid=s&latency=120&mode=caller")
            == "srt://h:9000?streamid=****&latency=120&mode=caller")
        // A shown parameter's value is shown only when it is a plain word or number.
        #expect(Redaction.redactURL("srt://h:9000?latency=1%20secret") == "srt://h:9000?latency=****")
        #expect(Redaction.redactURL("rtmp://h/app/key?onlyasecret") == "rtmp://h/app/****?****")
        #expect(Redaction.redactURL("srt://h:9000?streamid=s#frag") == "srt://h:9000?streamid=****#****")
    }

    /// Issue 30: one rule for every output, --print-config included.
    @Test func passwordsFragmentsAndQueriesAreRedactedToo() {
        #expect(Redaction.redactURL("rtmps://user:pw@h:443/app/key?x=1") == "rtmps://****@h:443/app/****?x=****")
        #expect(Redaction.redactURL("srt://user@h:9000") == "srt://****@h:9000")
        #expect(Redaction.redactURL("srt://h:9000#frag") == "srt://h:9000#****")
        #expect(Redaction.redactURL("rtmp://****@h/app/****?****") == "rtmp://****@h/app/****?****")
        #expect(Redaction.redact("to rtmp://a:b@h/live/k and srt://h:1?passphrase=p.")
            == "to rtmp://****@h/live/**** and srt://h:1?passphrase=****")
        #expect(Redaction.holdsSecret("rtmp://h/live/key") && Redaction.holdsSecret("srt://h:9000?streamid=s"))
        #expect(!Redaction.holdsSecret("rtmp://h/live/") && !Redaction.holdsSecret("srt://h:9000"))
        #expect(!Redaction.holdsSecret("srt://h:9000?latency=200"))
    }

    /// An RTMP URL's last segment is its key, even when the application was left out.
    @Test func anRTMPURLWithOneSegmentHidesIt() {
        #expect(Redaction.redactURL("rtmp://c.invalid/only-a-key") == "rtmp://c.invalid/****")
        #expect(Redaction.redactURL("rtmps://me:PASSWORD@h.invalid/key") == "rtmps://****@h.invalid/****")
        #expect(Redaction.redactURL("http://127.0.0.1:8080/index.html") == "http://127.0.0.1:8080/index.html")
    }

    @Test func aLineWithSeveralURLsQuotedOrNotHidesEachSecret() {
        let line = "pushing to rtmps://a.invalid/live/key1 and 'srt://b.invalid:9000?streamid=sid&passphrase=pass123456' "
            + "and rtmp://c.invalid/only-a-key"
        #expect(Redaction.redact(line) == "pushing to rtmps://a.invalid/live/**** and "
            + "'srt://b.invalid:9000?streamid=****&passphrase=****' and rtmp://c.invalid/****")
    }

    @Test func aKeyAServerQuotesIsMasked() {
        #expect(Redaction.mask("k3y", in: "stream k3y is in use (k3y)") == "stream **** is in use (****)")
        #expect(Redaction.mask("", in: "nothing to hide") == "nothing to hide")
    }

    /// The hand-written URL scanner finds what the pattern it replaced found (NSRegularExpression
    /// here is the oracle): every URL redacted, the text around it untouched.
    @Test func redactionMatchesTheRegularExpression() throws {
        let pattern = try NSRegularExpression(pattern: "[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>]+")
        func oracle(_ text: String) -> String {
            guard text.contains("://") else { return text }
            var result = "", last = text.startIndex
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let range = Range(match.range, in: text)!
                result += text[last..<range.lowerBound]
                result += Redaction.redactURL(String(text[range]))
                last = range.upperBound
            }
            return result + text[last...]
        }
        let texts = [
            "publishing to rtmp://127.0.0.1:1935/live/secretkey", "rtmp://h/app/key?token=1 and srt://h:9000?passphrase=x",
            "1abc://host/app/key", "://nothing", "x:// y", "a://b://c/d/e", "\"rtmps://h/a/k\" 'rtmp://h/a/k'<rtmp://h/a/k>",
            "no url here", "tab\trtmp://h/a/k\nnext", "caf\u{e9} rtmp://h\u{e9}/a/k\u{2003}rest", "+.-://h/a/k", "..x-y://h/a/k",
            "rtmp://", "rtmp:///", "http://a http://b/c/d", "ab:/x://y/z/w", "rtmp://h/a/k\u{85}after",
        ]
        for text in texts { #expect(Redaction.redact(text) == oracle(text), "\(text)") }
    }
}
