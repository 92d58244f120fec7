import Control
import Foundation
import LivePush
import Testing

/// Issue 35, item 2: every SDK control reachable from `ctl` (and so the dashboard): the settings'
/// verbs, the music's loop, a snapshot series, as typed and as they name themselves back.
struct SettingCommandTests {
    @Test func everySettingParsesAndSpellsItselfBack() throws {
        let cases: [([String], ControlCommand)] = [
            (["restart"], .setting(.restart)),
            (["mirror", "push", "on"], .setting(.mirror(.push, on: true))),
            (["mirror", "preview", "off"], .setting(.mirror(.preview, on: false))),
            (["denoise", "medium"], .setting(.denoise(.medium))),
            (["agc", "on"], .setting(.agc(on: true))),
            (["voice-activity", "off"], .setting(.voiceActivity(on: false))),
            (["ear-monitor", "on"], .setting(.earMonitor(on: true, sink: nil))),
            (["ear-monitor", "on", "alsa_output.usb"], .setting(.earMonitor(on: true, sink: "alsa_output.usb"))),
            (["ear-monitor", "off"], .setting(.earMonitor(on: false, sink: nil))),
            (["preview", "open"], .setting(.preview(open: true))),
            (["preview", "close"], .setting(.preview(open: false))),
            (["log-level", "debug"], .setting(.logLevel(.debug))),
            (["bgm", "loop", "on"], .bgm(.loop(true))),
            (["bgm", "start", "/m/a.mp3"], .bgm(.start(path: "/m/a.mp3", loop: nil))),
            (["snapshot", "/tmp/s.png", "--count", "5", "--interval", "250"],
             .snapshot(path: "/tmp/s.png", series: ControlSnapshotSeries(count: 5, intervalMs: 250))),
            (["snapshot", "/tmp/s.png"], .snapshot(path: "/tmp/s.png")),
        ]
        for (words, expected) in cases {
            let parsed = try ControlCommand.parse(words)
            #expect(parsed == expected, "\(words)")
            // What the control event and the dashboard's log show is what was typed.
            #expect([parsed.verb] + parsed.arguments == words || words.first == "snapshot" && words.count == 2,
                    "\(words) spelled back as \([parsed.verb] + parsed.arguments)")
        }
        #expect(ControlCommand.verbs.map(\.verb).contains("mirror"), "the settings are in ctl's help")
    }

    @Test func aMistakeNamesTheWordAndWhatWouldBeRight() {
        let wrong: [([String], String)] = [
            (["mirror", "sideways", "on"], "use push|preview on|off"),
            (["mirror", "push"], "'mirror' needs on or off"),
            (["mirror", "push", "yes"], "use on or off"),
            (["denoise", "loud"], "use off, low, medium, high"),
            (["agc"], "'agc' needs on or off"),
            (["preview", "show"], "use open or close"),
            (["log-level", "verbose"], "use quiet, error, warning, info, debug"),
            (["restart", "now"], "use: restart"),
            (["ear-monitor", "off", "sink"], "use: ear-monitor on [SINK] | off"),
            (["bgm", "loop"], "'bgm' needs loop on|off"),
            (["snapshot", "/tmp/s.png", "--count", "0"], "--count takes 1 to 100"),
            (["snapshot", "/tmp/s.png", "--interval", "50"], "--interval takes 100 to 60000 ms"),
            (["snapshot", "/tmp/s.png", "--every", "2"], "use: snapshot FILE.png [--count N] [--interval MS]"),
        ]
        for (words, message) in wrong {
            #expect(throws: ControlError.self, "\(words)") { try ControlCommand.parse(words) }
            do {
                _ = try ControlCommand.parse(words)
            } catch {
                #expect(error.description.contains(message), "\(words): \(error.description)")
            }
        }
        // A mistyped verb gets the nearest one.
        do {
            _ = try ControlCommand.parse(["mirorr", "push", "on"])
            Issue.record("'mirorr' was taken")
        } catch {
            #expect(error.description.contains("did you mean 'mirror'?"), "\(error.description)")
        }
    }

    @Test func aSeriesNamesEachPictureBesideTheFile() {
        let series = ControlSnapshotSeries(count: 3, intervalMs: 100)
        #expect((1...3).map { series.path("/tmp/shot.png", index: $0) } == ["/tmp/shot-1.png", "/tmp/shot-2.png", "/tmp/shot-3.png"])
        #expect(ControlSnapshotSeries().path("/tmp/shot.png", index: 1) == "/tmp/shot.png")
    }
}
