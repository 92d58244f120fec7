import Control
import Foundation
import HTTPServer
import Testing

@testable import Dashboard

/// Issue 30: the report's escaping per place and its one-pass template; the dashboard's access rules.
struct PageSafetyTests {
    @Test func textAndAttributesLeaveNoWayOutOfTheirPlace() {
        let hostile = #"</title><img src=x onerror="a('b')"> & {{TITLE}}"#
        #expect(HTMLEscaping.text(hostile)
            == "&lt;/title&gt;&lt;img src=x onerror=&quot;a(&#39;b&#39;)&quot;&gt; &amp; {{TITLE}}")
        #expect(HTMLEscaping.attribute(#"x" onclick="y"#) == "x&quot; onclick=&quot;y")
    }

    @Test func jsonInAScriptHasNoAngleBracketAndParsesToTheSameValue() throws {
        let value = ["label": "</script><!--<script>&\u{2028}", "n": "1"]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
        let safe = HTMLEscaping.scriptJSON(json)
        #expect(!safe.contains("<") && !safe.contains(">") && !safe.contains("&") && !safe.contains("\u{2028}"))
        #expect(safe.contains(#"\u003c\/script\u003e"#))  // JSONSerialization writes / as \/
        let back = try #require(try JSONSerialization.jsonObject(with: Data(safe.utf8)) as? [String: String])
        #expect(back == value)
    }

    @Test func theTemplateIsFilledInOnePassAndAPlaceholderInAValueStaysText() throws {
        let template = PageTemplate(template: "<h1>{{A}}</h1><p>{{B}}</p><script>{{C}}</script>")
        let page = try template.fill(["A": .text("{{B}}<b>"), "B": .markup("<i>{{A}}</i>"),
                                      "C": .scriptJSON(#"["</script>"]"#)])
        #expect(page == #"<h1>{{B}}&lt;b&gt;</h1><p><i>{{A}}</i></p><script>["\u003c/script\u003e"]</script>"#)
        #expect(throws: PageTemplate.Mismatch.self) { try template.fill(["A": .text(""), "B": .text("")]) }
        #expect(throws: PageTemplate.Mismatch.self) {
            try template.fill(["A": .text(""), "B": .text(""), "C": .text(""), "D": .text("")])
        }
    }

    private func request(_ method: String = "GET", _ path: String = "/api/status", query: [String: String] = [:],
                         headers: [String: String]) -> HTTPRequest {
        HTTPRequest(method: method, path: path, query: query, headers: headers)
    }

    @Test func onlyTheDashboardsOwnHostAndOriginAreAnswered() {
        let access = DashboardAccess(address: "127.0.0.1", port: 8080, token: "t", allCommands: false)
        #expect(access.refusal(request(headers: ["host": "127.0.0.1:8080"])) == nil)
        #expect(access.refusal(request(headers: ["host": "localhost:8080", "origin": "http://localhost:8080"])) == nil)
        #expect(access.refusal(request(headers: ["host": "attacker.example:8080"]))?.status == 421)
        #expect(access.refusal(request(headers: ["host": "127.0.0.1:8081"]))?.status == 421)
        #expect(access.refusal(request(headers: [:]))?.status == 421)
        let otherPort = request(headers: ["host": "127.0.0.1:8080", "origin": "http://127.0.0.1:9999"])
        #expect(access.refusal(otherPort)?.status == 403)
        #expect(access.refusal(request(headers: ["host": "127.0.0.1:8080", "origin": "null"]))?.status == 403)
        #expect(access.refusal(request(headers: ["host": "127.0.0.1:8080", "sec-fetch-site": "same-site"]))?.status == 403)
        let any = DashboardAccess(address: "0.0.0.0", port: 8080, token: "t", allCommands: false)
        #expect(any.acceptsHost("192.168.1.5:8080") && any.acceptsHost("localhost:8080"))
        #expect(!any.acceptsHost("mybox.example:8080"))
        let lan = DashboardAccess(address: "192.168.1.5", port: 8080, token: "t", allCommands: false)
        #expect(lan.acceptsHost("192.168.1.5:8080") && !lan.acceptsHost("localhost:8080"))
    }

    @Test func theTokenComesFromTheHeaderOrTheQueryOfAGetNeverACookie() {
        let access = DashboardAccess(address: "127.0.0.1", port: 8080, token: "secret", allCommands: false)
        #expect(access.hasToken(request(headers: ["x-livepush-token": "secret"])))
        #expect(access.hasToken(request(query: ["token": "secret"], headers: [:])))
        #expect(!access.hasToken(request("POST", "/api/control", query: ["token": "secret"], headers: [:])))
        #expect(!access.hasToken(request(headers: ["x-livepush-token": "secreT"])))
        #expect(!access.hasToken(HTTPRequest(method: "GET", path: "/", cookies: ["livepush_token": "secret"])))
    }

    @Test func theButtonsCommandsAloneUnlessAllAreAllowed() throws {
        let buttons = DashboardAccess(address: "127.0.0.1", port: 1, token: "t", allCommands: false)
        let all = DashboardAccess(address: "127.0.0.1", port: 1, token: "t", allCommands: true)
        for words in [["pause"], ["resume"], ["mute", "mic"], ["unmute", "all"], ["bitrate", "900"], ["reconnect"],
                      ["restart"], ["mirror", "push", "on"], ["preview", "open"], ["denoise", "high"], ["agc", "on"],
                      ["voice-activity", "off"], ["ear-monitor", "on"], ["log-level", "debug"], ["volume", "mic", "50"],
                      ["bgm", "loop", "on"], ["bgm", "volume", "80"], ["record", "split"]] {
            #expect(buttons.commandRefusal(try ControlCommand.parse(words)) == nil, "\(words)")
        }
        // Nothing that names a file, a device or a destination.
        for words in [["add", "rtmp://h/a/k"], ["snapshot", "/tmp/x.png"], ["bgm", "stop"], ["remove", "0"],
                      ["bgm", "start", "/tmp/a.mp3"], ["ear-monitor", "on", "alsa_output.hdmi"], ["record", "start", "/tmp/r.mkv"]] {
            #expect(buttons.commandRefusal(try ControlCommand.parse(words))?.contains("--dashboard-control all") == true)
            #expect(all.commandRefusal(try ControlCommand.parse(words)) == nil)
        }
    }
}
