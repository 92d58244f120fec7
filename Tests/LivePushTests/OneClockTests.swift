import CaptureLink
import Foundation
import LivePush
import Testing
import TestSupport

/// One clock for picture and sound (issue 29): a picture's timestamp is its tick's time, the sound's
/// is its frame's time, so a tick or a mix the pusher could not run in time leaves a gap, never a
/// shift. The stalls are made where they happen on a busy machine, in the pusher's own threads:
/// the video hook (on the video thread) or the audio hook (on the mixer's thread) sleeps. Every
/// flash is paired with its beep, each offset checked (no median to hide one), and what was left
/// out is checked against what the statistics counted.
@Suite(.serialized, .timeLimit(.minutes(10))) struct OneClockTests {
    /// Stalls the video thread (`sleepEveryVideoFrames`) or the audio thread (`audioStallAtMs`).
    final class Staller: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var videoFrames = 0
        var stallEveryVideoFrames = 0
        var videoStallMs = 0
        var audioStallAtMs: Int64?
        var audioStallMs = 0
        var statistics = LivePusherStatistics()
        var statisticsUpdates = 0
        /// Waits for two statistics updates from now (so that they count what happened before).
        func waitForFreshStatistics() -> Bool {
            let seen = lock.withLock { statisticsUpdates }
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if lock.withLock({ statisticsUpdates }) >= seen + 2 { return true }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return false
        }
        /// `framesDropped` is per second: summed here.
        var framesDroppedTotal = 0
        var warnings: [(code: Int32, message: String)] = []
        func onProcessVideoFrame(_ frame: inout VideoProcessFrame) {
            let sleepMs = lock.withLock { () -> Int in
                videoFrames += 1
                return stallEveryVideoFrames > 0 && videoFrames % stallEveryVideoFrames == 0 ? videoStallMs : 0
            }
            if sleepMs > 0 { Thread.sleep(forTimeInterval: Double(sleepMs) / 1000) }
        }
        func onProcessAudioFrame(_ frame: inout AudioFrame) {
            let sleepMs = lock.withLock { () -> Int in
                guard let at = audioStallAtMs, frame.ptsMs >= at else { return 0 }
                audioStallAtMs = nil
                return audioStallMs
            }
            if sleepMs > 0 { Thread.sleep(forTimeInterval: Double(sleepMs) / 1000) }
        }
        func onStatisticsUpdate(_ statistics: LivePusherStatistics) {
            lock.withLock {
                self.statistics = statistics
                statisticsUpdates += 1
                framesDroppedTotal += statistics.framesDropped
            }
        }
        func onWarning(code: Int32, message: String, extraInfo: [String: String]) {
            lock.withLock { warnings.append((code, message)) }
        }
    }

    /// Every second the helper shows white for 100 ms and plays a 1 kHz beep from the same instant.
    private static let inPulse: @Sendable (Double) -> Bool = { t in
        t.truncatingRemainder(dividingBy: 1) >= 0.5 && t.truncatingRemainder(dividingBy: 1) < 0.6
    }
    static let flash: @Sendable (Double) -> UInt8 = { inPulse($0) ? 255 : 0 }
    static let beep: @Sendable (Double) -> Float = { t in inPulse(t) ? 0.5 * Float(sin(2 * Double.pi * 1000 * t)) : 0 }

    /// Records `seconds` of a SignalHelper's flash and beep through a LivePusher with `observer`.
    private func record(seconds: Double, observer: Staller, pushURL: String? = nil,
                        sound: @escaping @Sendable (Double) -> Float = beep, audioLagMs: Int = 0) throws -> String {
        let runtime = privateRuntimeDirectory()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("clock")).path + ".mkv"
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 30
        let pusher = try LivePusher(config: config, observer: observer)
        pusher.enableCustomVideoProcess(true)
        let group = UniqueName.make("clock")
        try pusher.startScreenCapture(group: group, runtimeDirectory: runtime)
        let helper = SignalHelper(group: group, runtime: runtime, picture: Self.flash, sound: sound)
        helper.audioLagMs = audioLagMs
        helper.start()
        Thread.sleep(forTimeInterval: 0.5)  // let it run: the helper's first half second before the recording
        #expect(pusher.startLocalRecording(path: path) == 0)
        if let pushURL { #expect(pusher.startPush(url: pushURL) == 0) }
        Thread.sleep(forTimeInterval: seconds)  // let it run: the `seconds` recorded
        observer.lock.withLock {
            observer.stallEveryVideoFrames = 0
            observer.audioStallAtMs = nil
        }
        Thread.sleep(forTimeInterval: 0.5)  // let it run: half a second without stalls
        pusher.stopLocalRecording()
        #expect(observer.waitForFreshStatistics(), "no statistics")
        helper.stop()
        pusher.destroy()
        #expect(helper.error == nil, "\(helper.error ?? "")")
        return path
    }

    @Test func picturesLeftOutByABusyVideoThreadShiftNothingThatFollows() throws {
        let observer = Staller()
        observer.stallEveryVideoFrames = 20
        observer.videoStallMs = 150  // 4 ticks missed every 20 pictures: 20 % of the pictures
        let path = try record(seconds: 8, observer: observer)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let offsetsMs = try AVOffsets.offsetsMs(path)
        print("A/V offset with the video thread stalled (audio - video), ms: \(offsetsMs.map { Int($0.rounded()) })")
        try #require(offsetsMs.count >= 7, "flashes paired with beeps: \(offsetsMs)")
        // A flash lands on the next tick run: up to a frame and the stall late, never more.
        #expect(offsetsMs.allSatisfy { $0 <= 40 && $0 >= -(40 + 33 + 150) }, "offsets \(offsetsMs)")
        #expect(abs(offsetsMs.suffix(3).max()! - offsetsMs.prefix(3).max()!) <= 40, "the offset moved: \(offsetsMs)")
        let counted = observer.lock.withLock { observer.statistics.videoSkippedFrames }
        let frames = try AVOffsets.videoTimes(path)
        let missing = zip(frames, frames.dropFirst()).reduce(0) { $0 + max(0, Int((($1.1 - $1.0) * 30).rounded()) - 1) }
        #expect(counted >= missing && missing >= 20, "\(missing) pictures missing in the file, \(counted) counted")
    }

    @Test func aStalledMixerCatchesUpAndItsSoundKeepsItsTime() throws {
        let observer = Staller()
        // 2.5 s into the recording (the timeline starts with capture), for 250 ms: under
        // `AudioPipeline.maxBehindMs`, so the mixer catches up by mixing (longer, it fills with
        // silence, counted). Before, 250 ms behind, it skipped frames and the sound moved early.
        observer.audioStallAtMs = 3000
        observer.audioStallMs = 250
        let path = try record(seconds: 7, observer: observer)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let offsetsMs = try AVOffsets.offsetsMs(path)
        print("A/V offset with the mixer stalled 250 ms (audio - video), ms: \(offsetsMs.map { Int($0.rounded()) })")
        try #require(offsetsMs.count >= 6, "flashes paired with beeps: \(offsetsMs)")
        // A flash is shown from the tick whose window holds its frame: up to a frame after its beep.
        #expect(offsetsMs.allSatisfy(AVOffsets.inSync), "offsets \(offsetsMs)")
    }

    /// A helper whose sound comes 120 ms after its time (more than the mixer's first 50 ms wait):
    /// the mix waits longer, so after the first chunks the tone has no hole, and those it had are
    /// counted in `audioGapMs`. Before, every chunk came too late and the recording was silent.
    @Test func lateSoundIsWaitedForAndWhatIsStillLostIsCounted() throws {
        let observer = Staller()
        let tone: @Sendable (Double) -> Float = { t in 0.5 * Float(sin(2 * Double.pi * 440 * t)) }
        let path = try record(seconds: 6, observer: observer, sound: tone, audioLagMs: 120)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let samples = try AudioAnalysis.decodeMono(path)
        try #require(samples.count > 5 * 48000, "\(samples.count) samples decoded")
        // Holes: 5 ms windows (inside the file, its first and last 100 ms aside) with no tone.
        let window = 240
        let quiet = stride(from: 4800, to: samples.count - 4800 - window, by: window).filter { start in
            AudioAnalysis.rmsDbfs(Array(samples[start..<start + window])) < -30
        }
        let holeMs = quiet.count * 5
        let lateHoles = quiet.filter { $0 > 2 * 48000 }.count * 5
        let counted = observer.lock.withLock { observer.statistics.audioGapMs }
        print("late sound: \(holeMs) ms of holes in the file (\(lateHoles) ms after 2 s), \(counted) ms counted")
        #expect(lateHoles == 0, "holes after the mix delay adapted: \(lateHoles) ms")
        #expect(holeMs <= counted + 30, "\(holeMs) ms of holes in the file, \(counted) ms counted")
        #expect(counted < 1000, "\(counted) ms counted as holes")
    }
}


/// Flash and beep onsets in a recording (ReceivedMedia's SyncMarks), each on its stream's own
/// timestamps (video: the decoded pictures' times, the rate not made constant; audio: the decoded
/// samples from the stream's start time, the AAC timeline being continuous).
enum AVOffsets {
    /// In sync: the beep within 40 ms of the flash, or up to a frame (33 ms) more before it (a flash
    /// is shown from the tick whose window holds its frame, up to half an interval after it).
    static let inSync: @Sendable (Double) -> Bool = { $0 <= 40 && $0 >= -(40 + 33) }

    static func videoTimes(_ path: String) throws -> [Double] {
        try MediaProbe.videoFrameTimes(path, timeoutSeconds: 600)  // minutes of 1080p under a hog take minutes
    }

    /// For each flash, the nearest beep onset minus the flash's onset, ms.
    static func offsetsMs(_ path: String) throws -> [Double] {
        try pairs(path).map(\.offsetMs)
    }

    /// For each flash the sound covers (it starts and ends a little after the picture): its time (s)
    /// and the nearest beep onset (the first sample over a quarter of the beep's amplitude after 0.5 s
    /// of less) minus the flash's onset (ms).
    static func pairs(_ path: String) throws -> [(timeS: Double, offsetMs: Double)] {
        let startS = try MediaProbe.audioStartTime(path)
        let samples = try AudioAnalysis.decodeMono(path)
        let endS = startS + Double(samples.count) / 48000
        let flashes = SyncMarks.flashOnsetsS(try ReceivedPictures.decode(path, width: 8))
            .filter { $0 > startS + 0.2 && $0 < endS - 0.2 }
        let beeps = SyncMarks.beepOnsetsS(samples, startS: startS, amplitude: 0.125)
        try #require(!flashes.isEmpty && !beeps.isEmpty, "flashes at \(flashes), beeps at \(beeps)")
        return SyncMarks.pairs(flashesS: flashes, onsetsS: beeps)
    }
}
