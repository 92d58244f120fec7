import Control
import Foundation
import Testing

/// Parsing control commands: what a person types after `livepush ctl NAME`, and JSON requests.
struct ControlCommandTests {
    @Test func everyVerbParsesWithItsValues() throws {
        #expect(try ControlCommand.parse(["status"]) == .status)
        #expect(try ControlCommand.parse(["pause"]) == .pause)
        #expect(try ControlCommand.parse(["resume"]) == .resume)
        #expect(try ControlCommand.parse(["mute"]) == .mute(.all))
        #expect(try ControlCommand.parse(["mute", "mic"]) == .mute(.mic))
        #expect(try ControlCommand.parse(["unmute", "desktop"]) == .unmute(.desktop))
        #expect(try ControlCommand.parse(["volume", "mic", "80"]) == .volume(.mic, percent: 80))
        #expect(try ControlCommand.parse(["bitrate", "800"]) == .bitrate(kbps: 800))
        #expect(try ControlCommand.parse(["min-bitrate", "300"]) == .minBitrate(kbps: 300))
        #expect(try ControlCommand.parse(["add", "rtmp://h/live/k"]) == .add(url: "rtmp://h/live/k"))
        // A label, before or after the URL, is the LABEL=URL form; the key is redacted in the arguments.
        #expect(try ControlCommand.parse(["add", "--label", "studio", "rtmp://h/live/k"]) == .add(url: "studio=rtmp://h/live/k"))
        #expect(try ControlCommand.parse(["add", "rtmp://h/live/k", "--label", "b-2"]) == .add(url: "b-2=rtmp://h/live/k"))
        #expect(try ControlCommand.parse(["add", "--label", "studio", "rtmp://h/live/k"]).arguments == ["studio=rtmp://h/live/****"])
        #expect(throws: ControlError.self) { try ControlCommand.parse(["add", "--label", "two words", "rtmp://h/live/k"]) }
        #expect(throws: ControlError.self) { try ControlCommand.parse(["add", "--label"]) }
        #expect(try ControlCommand.parse(["remove", "1"]) == .remove(index: 1))
        #expect(try ControlCommand.parse(["reconnect"]) == .reconnect)
        #expect(try ControlCommand.parse(["events"]) == .events)
        #expect(try ControlCommand.parse(["bgm", "start", "/m/song.mp3"]) == .bgm(.start(path: "/m/song.mp3", loop: nil)))
        #expect(try ControlCommand.parse(["bgm", "start", "/m/song.mp3", "loop"]) == .bgm(.start(path: "/m/song.mp3", loop: true)))
        #expect(try ControlCommand.parse(["bgm", "stop"]) == .bgm(.stop))
        #expect(try ControlCommand.parse(["bgm", "pause"]) == .bgm(.pause))
        #expect(try ControlCommand.parse(["bgm", "resume"]) == .bgm(.resume))
        #expect(try ControlCommand.parse(["bgm", "volume", "40"]) == .bgm(.volume(percent: 40)))
        #expect(try ControlCommand.parse(["bgm", "start", "/m/song.mp3", "loop"]).arguments == ["start", "/m/song.mp3", "loop"])
    }

    /// `replay save [FILE]` (issue 34): with a file of a recording's extension, or none (the run names it).
    @Test func replaySaveTakesAFileOrNone() throws {
        #expect(try ControlCommand.parse(["replay", "save"]) == .replay(.save(path: nil)))
        #expect(try ControlCommand.parse(["replay", "save", "/v/clip.mp4"]) == .replay(.save(path: "/v/clip.mp4")))
        #expect(try ControlCommand.parse(["replay", "save", "/v/clip.mkv"]).arguments == ["save", "/v/clip.mkv"])
        #expect(throws: ControlError.missingValue(command: "replay", expected: "save [FILE]")) { try ControlCommand.parse(["replay"]) }
        #expect(throws: ControlError.invalidValue(command: "replay", value: "clip.txt",
                                                   reason: "the file name must end in .mkv, .mp4 or .flv")) {
            try ControlCommand.parse(["replay", "save", "clip.txt"])
        }
        #expect(throws: ControlError.invalidValue(command: "replay", value: "load", reason: "use: replay save [FILE]")) {
            try ControlCommand.parse(["replay", "load"])
        }
        #expect(throws: ControlError.invalidValue(command: "replay", value: "b.mkv", reason: "use: replay save [FILE]")) {
            try ControlCommand.parse(["replay", "save", "a.mkv", "b.mkv"])
        }
    }

    @Test func badMusicCommandsSayWhatIsWrong() {
        #expect(throws: ControlError.missingValue(command: "bgm", expected: "start, stop, pause, resume or volume")) {
            try ControlCommand.parse(["bgm"])
        }
        #expect(throws: ControlError.missingValue(command: "bgm", expected: "start FILE [loop]")) {
            try ControlCommand.parse(["bgm", "start"])
        }
        #expect(throws: ControlError.invalidValue(command: "bgm", value: "twice",
                                                   reason: "use: bgm start FILE [loop] | stop | pause | resume | volume PERCENT | loop on|off")) {
            try ControlCommand.parse(["bgm", "start", "/m/song.mp3", "twice"])
        }
        #expect(throws: ControlError.invalidValue(command: "bgm", value: "900",
                                                   reason: "use a whole number of percent from 0 to 400")) {
            try ControlCommand.parse(["bgm", "volume", "900"])
        }
        #expect(throws: ControlError.invalidValue(command: "bgm", value: "now", reason: "'bgm stop' takes no value")) {
            try ControlCommand.parse(["bgm", "stop", "now"])
        }
    }

    @Test func badCommandsAndValuesSayWhatIsWrong() {
        #expect(throws: ControlError.unknownCommand("jump", known: ControlCommand.verbs.map(\.verb))) {
            try ControlCommand.parse(["jump"])
        }
        #expect(throws: ControlError.invalidValue(command: "bitrate", value: "fast",
                                                   reason: "use a whole number of kbps from 100 to 50000")) {
            try ControlCommand.parse(["bitrate", "fast"])
        }
        #expect(throws: ControlError.invalidValue(command: "volume", value: "500",
                                                   reason: "use a whole number of percent from 0 to 400")) {
            try ControlCommand.parse(["volume", "mic", "500"])
        }
        #expect(throws: ControlError.invalidValue(command: "mute", value: "speaker", reason: "use mic, desktop or all")) {
            try ControlCommand.parse(["mute", "speaker"])
        }
        #expect(throws: ControlError.missingValue(command: "bitrate", expected: "KBPS")) {
            try ControlCommand.parse(["bitrate"])
        }
        #expect(throws: ControlError.invalidValue(command: "pause", value: "now", reason: "'pause' takes no value")) {
            try ControlCommand.parse(["pause", "now"])
        }
    }

    @Test func jsonRequestsCarryTheSameCommands() throws {
        #expect(try ControlHandler.parseRequest(#"{"command":"bitrate","args":["800"]}"#) == .bitrate(kbps: 800))
        #expect(try ControlHandler.parseRequest(#"{"command":"volume","args":["desktop",50]}"#) == .volume(.desktop, percent: 50))
        #expect(try ControlHandler.parseRequest(#"{"command":"status"}"#) == .status)
        #expect(throws: ControlError.badRequest("the line is not a JSON object")) {
            try ControlHandler.parseRequest("bitrate 800")
        }
        #expect(throws: ControlError.badRequest("no \"command\" string")) { try ControlHandler.parseRequest(#"{"args":[]}"#) }
    }

    @Test func jsonLinesAreSortedEscapedAndReadBackByJSONSerialization() throws {
        let object: [String: Any] = ["b": 1, "a": "q\"uo\\te\n\u{1}é", "c": [true, false], "d": ["y": 2.5, "x": UInt64(7)],
                                     "e": NSNull()]
        let line = JSONLine.encode(object)
        #expect(line == #"{"a":"q\"uo\\te\n\u0001é","b":1,"c":[true,false],"d":{"x":7,"y":2.5},"e":null}"#)
        let back = try #require(JSONLine.decode(line))
        #expect(back["a"] as? String == "q\"uo\\te\n\u{1}é")
        #expect((back["d"] as? [String: Any])?["y"] as? Double == 2.5)
    }

    @Test func addShowsItsURLRedacted() {
        #expect(ControlCommand.add(url: "rtmp://h/app/key").arguments == ["rtmp://h/app/****"])
    }
}
