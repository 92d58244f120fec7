import Foundation

/// How sound and picture line up in a received file, read from marks a test or a benchmark put in
/// them: white flashes in the pictures, tone bursts (or beeps) in the sound, each on its own stream's
/// timestamps. The A/V sync tests and `livepush-bench load` read them alike.
public enum SyncMarks {
    /// The times (s) of the pictures whose mean luma rises past mid-grey from the picture before:
    /// each white flash's first picture.
    public static func flashOnsetsS(_ pictures: ReceivedPictures) -> [Double] {
        let means = (0..<pictures.count).map { pictures.meanLuma($0) }
        return means.indices.dropFirst().filter { means[$0] > 128 && means[$0 - 1] <= 128 }
            .map { Double(pictures.timesMs[$0]) / 1000 }
    }

    /// The start (s) of each burst of `frequencyHz` in `samples` (mono, the first at `startS`): the first
    /// 2.5 ms window (a hop of 1 ms) with power at that frequency after 0.5 s without.
    public static func burstOnsetsS(_ samples: [Float], startS: Double, frequencyHz: Double,
                                    sampleRateHz: Int = 48000) -> [Double] {
        let window = sampleRateHz / 400, hop = sampleRateHz / 1000
        var onsets: [Double] = [], last = -1.0
        for index in stride(from: 0, to: max(0, samples.count - window), by: hop) {
            let power = tonePower(samples[index..<index + window], frequencyHz: frequencyHz,
                                  sampleRateHz: Double(sampleRateHz))
            guard power / Double(window * window) > 0.01 else { continue }
            let t = startS + Double(index) / Double(sampleRateHz)
            if t - last > 0.5 { onsets.append(t) }
            last = t
        }
        return onsets
    }

    /// The start (s) of each beep on silence: the first sample over `amplitude` after 0.5 s below it.
    public static func beepOnsetsS(_ samples: [Float], startS: Double, amplitude: Float,
                                   sampleRateHz: Int = 48000) -> [Double] {
        var onsets: [Double] = [], last = -1.0
        for index in samples.indices where abs(samples[index]) > amplitude {
            let t = startS + Double(index) / Double(sampleRateHz)
            if t - last > 0.5 { onsets.append(t) }
            last = t
        }
        return onsets
    }

    /// For each flash: its time (s) and the nearest sound onset minus the flash (ms). Empty when
    /// either list is.
    public static func pairs(flashesS: [Double], onsetsS: [Double]) -> [(timeS: Double, offsetMs: Double)] {
        guard !onsetsS.isEmpty else { return [] }
        return flashesS.map { flash in (flash, (onsetsS.min { abs($0 - flash) < abs($1 - flash) }! - flash) * 1000) }
    }

    /// The least-squares slope of y over x; nil with fewer than two points or no spread in x.
    public static func slope(_ points: [(x: Double, y: Double)]) -> Double? {
        let n = Double(points.count)
        guard n > 1 else { return nil }
        let meanX = points.reduce(0) { $0 + $1.x } / n, meanY = points.reduce(0) { $0 + $1.y } / n
        let sxy = points.reduce(0) { $0 + ($1.x - meanX) * ($1.y - meanY) }
        let sxx = points.reduce(0) { $0 + ($1.x - meanX) * ($1.x - meanX) }
        return sxx == 0 ? nil : sxy / sxx
    }

    /// The energy of `samples` at `frequencyHz` (the Goertzel algorithm), to compare tones in one signal.
    public static func tonePower(_ samples: ArraySlice<Float>, frequencyHz: Double, sampleRateHz: Double) -> Double {
        let coefficient = 2 * cos(2 * Double.pi * frequencyHz / sampleRateHz)
        var previous = 0.0, beforePrevious = 0.0
        for sample in samples {
            let current = Double(sample) + coefficient * previous - beforePrevious
            beforePrevious = previous
            previous = current
        }
        return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
    }
}
