@testable import AudioCapture
import Testing
import TestSupport

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

/// The timeline check the capture tests rely on flags what it should.
struct ChunkTimelineTests {
    let chunkNs: Int64 = 20_000_000

    @Test func contiguousChunksAndOneForwardResyncPass() {
        #expect(ChunkTimeline.problems([1_000_000_000, 1_020_000_000, 1_040_000_500, 1_113_333_330, 1_133_333_330],
                                       chunkNs: chunkNs).isEmpty)
    }

    @Test func overlapsGapsUnder30msAndRepeatedResyncsAreReported() {
        #expect(ChunkTimeline.problems([1_000_000_000, 1_010_000_000], chunkNs: chunkNs) == ["step 1 is 10.0 ms"])
        #expect(ChunkTimeline.problems([1_000_000_000, 1_045_000_000], chunkNs: chunkNs) == ["step 1 is 45.0 ms"])
        #expect(ChunkTimeline.problems([1_000_000_000, 900_000_000], chunkNs: chunkNs) == ["step 1 is -100.0 ms"])
        #expect(ChunkTimeline.problems([0, 100_000_000, 200_000_000], chunkNs: chunkNs)
            == ["2 discontinuities in 3 chunks"])
    }
}
