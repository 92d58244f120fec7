import Foundation

/// Voice activity from the level of 20 ms frames: a voice starts when a frame is 12 dB above
/// the noise floor (and above −50 dBFS) for two frames in a row (40 ms), and stops after 120 ms
/// 6 dB below that; the floor follows quiet frames down at once and rises 1 dB a second, so steady hiss
/// becomes the floor and is not a voice. Answers well within the 300 ms the reference asks.
public struct VoiceActivityDetector: Sendable {
    public private(set) var isActive = false
    public private(set) var noiseFloorDbfs = -70.0
    private var loudFrames = 0
    private var quietFrames = 0
    let frameMs: Int
    static let marginDb = 12.0
    static let hysteresisDb = 6.0
    static let minimumDbfs = -50.0
    static let onsetMs = 40
    static let releaseMs = 120

    public init(frameMs: Int = 20) { self.frameMs = frameMs }

    /// Feeds one frame's mean square (per sample, −1...1 scale); returns the new state when it changed.
    public mutating func feed(meanSquare: Double) -> Bool? {
        let dbfs = meanSquare > 0 ? 10 * log10(meanSquare) : -120
        // Hysteresis: a voice that has started stays until 6 dB under the start threshold, so a
        // level that wavers around it (a suppressor adapting) does not flap.
        let threshold = max(Self.minimumDbfs, noiseFloorDbfs + Self.marginDb) - (isActive ? Self.hysteresisDb : 0)
        let loud = dbfs > threshold
        if dbfs < noiseFloorDbfs {
            noiseFloorDbfs = max(dbfs, -90)
        } else {
            noiseFloorDbfs = min(noiseFloorDbfs + Double(frameMs) / 1000, -20)
        }
        if loud {
            loudFrames += 1
            quietFrames = 0
        } else {
            quietFrames += 1
            loudFrames = 0
        }
        if !isActive && loudFrames * frameMs >= Self.onsetMs {
            isActive = true
            return true
        }
        if isActive && quietFrames * frameMs >= Self.releaseMs {
            isActive = false
            return false
        }
        return nil
    }
}
