import CaptureLink
import Testing
import TestSupport

/// START's setup info must be one JSON object (SPEC §5): anything else is a TEXT violation that names
/// it, and the session never starts. The check reads the text with FoundationEssentials' JSONDecoder,
/// every value decoded (issue 36: CaptureLink imports no Foundation, so that the helper links no ICU);
/// it refuses what JSONSerialization refused before. Real sockets.
@Suite(.timeLimit(.minutes(10))) struct SourceInfoTests {
    private func start(sourceInfo: String) throws -> [CaptureLinkEvent] {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        var pusherConfiguration = PusherEndpointConfiguration(group: "test")
        pusherConfiguration.runtimeDirectory = runtime
        let pusher = try PusherEndpoint(configuration: pusherConfiguration) { recorder.record($0) }
        defer { pusher.stop() }
        var configuration = HelperEndpointConfiguration(group: "test", helperName: "info", helperVersion: "1",
                                                        pixelFormats: [.bgrx], maxWidth: 64, maxHeight: 64)
        configuration.runtimeDirectory = runtime
        let helper = try HelperEndpoint(configuration: configuration)
        try helper.start(sourceInfo: sourceInfo)
        let outcome = recorder.wait(timeoutSeconds: 10) { $0.isStarted || $0.violation != nil }
        try #require(outcome != nil, "the pusher reported neither a start nor a violation for START \(sourceInfo)")
        return recorder.all
    }

    static let objects = [
        "{}",
        #"{"source":"x11","screen":{"width":1920,"rects":[[0,0,1,1]],"scale":1.5e0,"ok":true,"n":null}}"#,
        " \n{\"a\":\"\\u00e9\\n\"}\t",
        #"{"a":"\u001b","c":[[{}],-0.5e-3]}"#,
        "{\"b\":\"\u{7f}é😀\"}",
    ]

    @Test(arguments: objects)
    func aJSONObjectStartsTheSession(_ info: String) throws {
        let events = try start(sourceInfo: info)
        #expect(events.filter(\.isStarted).count == 1, "\(events)")
        #expect(events.allSatisfy { $0.violation == nil }, "\(events)")
    }

    /// Not an object; then raw control characters inside a string (hostile_helper.py's
    /// escapes-in-start: JSONDecoder alone let them through), a bad escape, a lone surrogate, bad numbers.
    static let others = [
        "", "[1,2]", "\"text\"", "42", "null", "{", #"{"a":1} {"b":2}"#, "{'a':1}",
        "{\"source\":\"\u{1b}[2J\"}", "{\"a\":[1,{\"b\":\"\t\"}]}", #"{"a":"\q"}"#, #"{"a":"\ud800"}"#,
        #"{"a":01}"#, #"{"a":tru}"#,
    ]

    @Test(arguments: others)
    func anythingElseIsATextViolationThatQuotesIt(_ info: String) throws {
        let events = try start(sourceInfo: info)
        let violations = events.compactMap(\.violation)
        #expect(violations.count == 1, "\(events)")
        #expect(violations.first?.code == .text, "\(events)")
        #expect(violations.first?.detail.hasPrefix("START.info is not a JSON object: ") == true, "\(events)")
        #expect(!events.contains { $0.isStarted }, "\(events)")
    }
}
