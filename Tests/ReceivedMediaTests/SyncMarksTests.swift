import Foundation
import ReceivedMedia
import Testing

/// The marks the A/V sync tests and `livepush-bench load` read, on signals whose marks are known.
@Suite struct SyncMarksTests {
    /// 3 s of 48 kHz silence with a 3 kHz burst of 100 ms at 0.5 s and at 2.0 s.
    private func bursts() -> [Float] {
        (0..<(48000 * 3)).map { index in
            let t = Double(index) / 48000
            let inBurst = (0.5..<0.6).contains(t) || (2.0..<2.1).contains(t)
            return inBurst ? Float(0.5 * sin(2 * Double.pi * 3000 * t)) : 0
        }
    }

    @Test func burstsAreFoundAtTheirStartWithinAMillisecond() {
        let onsets = SyncMarks.burstOnsetsS(bursts(), startS: 10, frequencyHz: 3000)
        #expect(onsets.count == 2, "\(onsets)")
        #expect(zip(onsets, [10.5, 12.0]).allSatisfy { abs($0 - $1) <= 0.0035 }, "\(onsets)")
        #expect(SyncMarks.burstOnsetsS(bursts(), startS: 0, frequencyHz: 1000).isEmpty, "no 1 kHz in 3 kHz bursts")
    }

    @Test func beepsAreFoundAtTheirFirstLoudSample() {
        let onsets = SyncMarks.beepOnsetsS(bursts(), startS: 0, amplitude: 0.125)
        #expect(onsets.count == 2 && abs(onsets[0] - 0.5) < 0.001 && abs(onsets[1] - 2.0) < 0.001, "\(onsets)")
    }

    @Test func eachFlashPairsWithTheNearestOnset() {
        let pairs = SyncMarks.pairs(flashesS: [1.0, 2.0, 3.0], onsetsS: [1.02, 1.97, 5.0])
        #expect(pairs.map(\.timeS) == [1.0, 2.0, 3.0])
        #expect(zip(pairs.map(\.offsetMs), [20.0, -30.0, -1030.0]).allSatisfy { abs($0 - $1) < 1e-6 }, "\(pairs)")
        #expect(SyncMarks.pairs(flashesS: [1.0], onsetsS: []).isEmpty)
    }

    @Test func theSlopeIsTheLeastSquaresOneAndUndefinedWithoutSpread() throws {
        let slope = try #require(SyncMarks.slope([(0, 1), (1, 3), (2, 5)]))
        #expect(abs(slope - 2) < 1e-9)
        #expect(SyncMarks.slope([(1, 1), (1, 2)]) == nil)
        #expect(SyncMarks.slope([(1, 1)]) == nil)
    }
}
