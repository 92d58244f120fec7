@testable import AudioCapture
import Testing

/// The "default" metadata holds JSON values such as `{"name":"alsa_input.pci-0000_00_1f.3"}`.
struct MetadataValueTests {
    @Test func nameIsReadFromCompactAndSpacedJSON() {
        #expect(PipeWireGraph.jsonName(#"{"name":"livepush-test-mic"}"#) == "livepush-test-mic")
        #expect(PipeWireGraph.jsonName(#"{ "name": "alsa_input.pci-0000_00_1f.3.analog-stereo" }"#)
            == "alsa_input.pci-0000_00_1f.3.analog-stereo")
    }

    @Test func escapedQuotesStayInTheName() {
        #expect(PipeWireGraph.jsonName(#"{"name":"odd\"name"}"#) == #"odd"name"#)
    }

    @Test func valuesWithoutAStringNameGiveNil() {
        #expect(PipeWireGraph.jsonName("{}") == nil)
        #expect(PipeWireGraph.jsonName(#"{"name":12}"#) == nil)
        #expect(PipeWireGraph.jsonName(#"{"name":"unterminated"#) == nil)
        #expect(PipeWireGraph.jsonName("") == nil)
    }
}
