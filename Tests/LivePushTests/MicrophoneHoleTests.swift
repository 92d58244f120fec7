import Foundation
@testable import LivePush
import Testing
import TestSupport

/// The microphone's processing sees only what the microphone captured. On a busy machine its
/// samples can reach the mixer late, and the mixer then fills part or all of a 20 ms frame with
/// silence (a hole, counted as such). speexdsp's noise estimate falls at once to digital silence
/// and climbs back slowly, so holes fed to it undid the suppression for seconds after each one
/// (CI: 5.7 dB instead of 19 at nginx, under the full suite's load).
struct MicrophoneHoleTests {
    /// 20 ms frames of white noise at about −40 dBFS, mono 48 kHz, from a fixed seed.
    private struct Noise {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        mutating func frame() -> [Float] {
            (0..<960).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Float(Double(state >> 11) / Double(1 << 53) * 2 - 1) * 0.017
            }
        }
    }

    private func meanDbfs(_ frames: [[Float]]) -> Double {
        let squares = frames.joined().reduce(0.0) { $0 + Double($1) * Double($1) }
        return 10 * log10(squares / Double(max(1, frames.joined().count)))
    }

    /// Runs 6 s of noise through suppression (high), with a hole of 80 ms every second when
    /// `holes` (from the middle of one frame to the middle of the fifth after it, as a late chunk
    /// leaves it); returns the noise's level in the last 2 s, and the highest level of a frame
    /// partly in a hole there.
    private func suppressedLevel(holes: Bool) -> (whole: Double, partialMax: Double) {
        let processing = MicrophoneProcessing()
        processing.prepare(frameSamples: 960, rateHz: 48000, channels: 1)
        processing.configure(denoise: .high, automaticGain: false)
        var noise = Noise()
        var kept: [[Float]] = [], partialDbfs: [Double] = []
        for index in 0..<300 {
            var frame = noise.frame()
            var captured = 960
            switch holes ? index % 50 : 0 {
            case 45: captured = 480; for sample in 480..<960 { frame[sample] = 0 }
            case 46, 47, 48: captured = 0; frame = [Float](repeating: 0, count: 960)
            case 49: captured = 480; for sample in 0..<480 { frame[sample] = 0 }
            default: break
            }
            processing.process(&frame, capturedFrames: captured)
            guard index >= 200 else { continue }
            if captured == 960 { kept.append(frame) }
            if captured == 480 { partialDbfs.append(meanDbfs([frame])) }
        }
        return (meanDbfs(kept), partialDbfs.max() ?? -.infinity)
    }

    @Test func holesInTheMicrophoneDoNotUndoNoiseSuppression() {
        var noise = Noise()
        let input = meanDbfs((0..<100).map { _ in noise.frame() })
        let steady = suppressedLevel(holes: false).whole, withHoles = suppressedLevel(holes: true)
        print("noise in \(input) dBFS; suppressed \(steady) dBFS without holes, \(withHoles.whole) dBFS with an 80 ms hole a second (frames beside a hole at most \(withHoles.partialMax) dBFS)")
        #expect(input - steady >= 15, "suppression without holes: \(input) -> \(steady) dBFS")
        #expect(withHoles.whole - steady <= 3, "holes raised the suppressed noise from \(steady) to \(withHoles.whole) dBFS")
        #expect(input - withHoles.partialMax >= 15, "a frame beside a hole kept its noise: \(withHoles.partialMax) dBFS")
    }
}
