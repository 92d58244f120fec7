import CaptureLink
import Foundation
import LinuxSystem
import Media
import Synchronization

/// The sources the audio pipeline mixes.
public enum AudioSourceKind: String, Sendable, CaseIterable {
    /// The microphone, captured by the pusher itself.
    case microphone
    /// Desktop or application audio sent by the capture helper (AUDIO messages).
    case desktop
    /// Background music decoded from a file (`LivePusher.startBGM`).
    case music
    /// PCM the application sends itself (`LivePusher.sendPCM`).
    case external
}

/// A source the mixer asks for its samples every 20 ms (background music), instead of one
/// that pushes them with capture timestamps.
protocol AudioPullSource: AnyObject, Sendable {
    /// Exactly `frameCount` sample frames in the pipeline's format (silence where there are none).
    func read(frameCount: Int) -> [Float]
}

/// What the audio pipeline produces.
struct AudioPipelineSettings: Sendable {
    var sampleRateHz: Int
    var channels: Int
    var bitrateKbps: Int
    /// CLOCK_MONOTONIC time of the shared timeline's zero (the video pipeline's first tick).
    var epochNs: UInt64
    /// How long after a 20 ms frame's end the mixer waits for late samples before mixing it, at
    /// least: a chunk that still comes too late raises the wait, up to `maxMixDelayMs`.
    var mixDelayMs: Int = 50
    /// The most the mixer waits: what comes later still is a hole, counted (`gapMs`).
    var maxMixDelayMs: Int = 250
    /// Also encode each source on its own (`SourceTracks`), for recordings with a track per source.
    var sourceTracks = false
}

/// The audio pipeline, on its own thread: every 20 ms of the shared CLOCK_MONOTONIC timeline it
/// mixes each source's samples for that interval (resampled to the output format by
/// libswresample, placed by their capture timestamps), applies volumes and mute, lets the
/// application process the frame, and encodes AAC for the sinks. A source with nothing for an
/// interval contributes silence, so the output never stops and its timestamps stay continuous.
///
/// One clock: the n-th 20 ms frame is the interval at epoch + n * 20 ms, and the AAC encoder's
/// timestamps count its samples: after a stall of the process the frames missed are mixed at once
/// (a burst); only when the mixer is more than `maxBehindMs` behind (stopped or starved that long)
/// does it stop mixing them and encode silence for them at once (cheaper than mixing, and the
/// timestamps stay continuous), counted as a hole: the sound keeps its time either way.
///
/// The mix waits `mixDelayMs` after a frame's end for late samples; a chunk that comes after its
/// frame was mixed raises the wait (bounded by `maxMixDelayMs`, lowered again once chunks are on
/// time), and the silence a delivering source's hole left in the mix is counted (`gapMs`).
final class AudioPipeline: @unchecked Sendable {
    let settings: AudioPipelineSettings
    let encoder: AACEncoder
    /// Samples per channel in one 20 ms frame.
    let frameSamples: Int
    private let running = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let state = Mutex(State())
    private let sinks = Mutex<[ObjectIdentifier: EncodedMediaSink]>([:])
    /// Called on the pipeline thread with every mixed frame (interleaved float, `channels` per
    /// sample) and its time on the shared timeline in ms.
    var onProcessFrame: (@Sendable (inout [Float], Int64) -> Void)?
    /// Called on the pipeline thread with the microphone's level as sent (0...100; 0 while it is
    /// muted, by itself or with the whole mix) every `levelIntervalMs`, and whether it is muted.
    var onMicrophoneLevel: (@Sendable (Int, Bool) -> Void)?
    /// Called once, from the thread that delivered it, when the first samples of any source arrive.
    var onFirstSamples: (@Sendable (AudioSourceKind) -> Void)?
    var onEncoderError: (@Sendable (MediaError) -> Void)?
    /// Called on the pipeline thread with each 20 ms of the microphone (before volume and mute),
    /// to change in place: noise suppression and voice activity (`MicrophoneProcessing`). The
    /// second argument is how many of its sample frames the microphone captured; the rest is
    /// silence filled in for samples that were late or lost (a hole).
    var onMicrophoneFrame: (@Sendable (inout [Float], Int) -> Void)?
    /// Called on the pipeline thread with each 20 ms of background music, after its volume:
    /// what ear monitoring plays besides the microphone. Set and cleared while it runs.
    var onMusicFrame: (@Sendable ([Float]) -> Void)? {
        get { taps.withLock { $0.music } }
        set { taps.withLock { $0.music = newValue } }
    }
    /// Called from the microphone's thread with its samples as they arrive (ear monitoring).
    /// Set and cleared while it runs.
    var onMicrophoneSamples: (@Sendable ([Float], Int, Int, UInt64) -> Void)? {
        get { taps.withLock { $0.microphone } }
        set { taps.withLock { $0.microphone = newValue } }
    }
    private struct Taps {
        var music: (@Sendable ([Float]) -> Void)?
        var microphone: (@Sendable ([Float], Int, Int, UInt64) -> Void)?
    }
    private let taps = Mutex(Taps())
    private let pullSources = Mutex<[AudioSourceKind: any AudioPullSource]>([:])
    /// The encoder's packets of one mix and the sinks they go to: reused (no allocation per 20 ms).
    private var packets: [EncodedAudioPacket] = []
    private var sinkList: [EncodedMediaSink] = []
    /// The mixer's working buffers, kept from frame to frame (only the pipeline's thread touches them):
    /// each source's 20 ms (by `kinds` index), whether it had any, how many of its sample frames were
    /// captured (not silence filled in), its energy as sent, and the mix.
    private static let kinds = AudioSourceKind.allCases
    private var sourceFrames = [[Float]](repeating: [], count: AudioSourceKind.allCases.count)
    private var hasFrame = [Bool](repeating: false, count: AudioSourceKind.allCases.count)
    private var capturedFrames = [Int](repeating: 0, count: AudioSourceKind.allCases.count)
    private var sentEnergyScratch = [Double](repeating: 0, count: AudioSourceKind.allCases.count)
    private var mix: [Float] = []
    /// Each source's gain in the last frame mixed (its volume; 0 muted or absent), by `kinds` index.
    private var frameGains = [Float](repeating: 0, count: AudioSourceKind.allCases.count)
    /// A track per source beside the mix (`settings.sourceTracks`), on this pipeline's thread.
    private let tracks: SourceTracks?

    struct State {
        var sources: [AudioSourceKind: SourceQueue] = [:]
        var volumes: [AudioSourceKind: Float] = [:]
        var muted = false
        /// Sources muted one by one (`setMuted(_:source:)`); `muted` silences the whole mix.
        var mutedSources: Set<AudioSourceKind> = []
        /// Each source's mean square as sent (after volume and mute), summed per frame since `takeLevels`.
        var sentEnergy: [AudioSourceKind: Double] = [:]
        var sentFrames = 0
        var levelIntervalMs = 0
        var sawFirstSamples = false
        var framesMixed = 0
        var bytesEncoded = 0
        /// The end of the last frame mixed, on the timeline (CLOCK_MONOTONIC ns): samples before it come too late.
        var mixedUpToNs: UInt64 = 0
        /// The mixer's wait after a frame's end now, and when a chunk last came too late.
        var mixDelayNs: UInt64 = 0
        var lastLateNs: UInt64 = 0
        /// Holes in delivering sources' sound, summed over the sources, since the start.
        var gapNs: UInt64 = 0
    }

    init(settings: AudioPipelineSettings) throws(MediaError) {
        self.settings = settings
        encoder = try AACEncoder(settings: AACEncoderSettings(
            sampleRateHz: settings.sampleRateHz, channels: settings.channels, bitrateKbps: settings.bitrateKbps))
        frameSamples = settings.sampleRateHz / 50
        tracks = settings.sourceTracks ? try SourceTracks(settings: encoder.settings, frameSamples: frameSamples) : nil
        state.withLock { $0.mixDelayNs = UInt64(max(0, settings.mixDelayMs)) * 1_000_000 }
    }

    /// Sound that sources delivering it could not bring in time (the mix had silence there), in ms
    /// of the stream, summed over the sources, since the start.
    var gapMs: Int { state.withLock { Int($0.gapNs / 1_000_000) } }

    /// Whether each source is encoded on its own too (`SourceTracks`).
    var hasSourceTracks: Bool { tracks != nil }

    /// How long the mixer waits now after a frame's end for late samples, in ms.
    var mixDelayMs: Int { state.withLock { Int($0.mixDelayNs / 1_000_000) } }

    func start() {
        guard !running.exchange(true, ordering: .sequentiallyConsistent) else { return }
        let thread = Thread { [self] in
            ThreadName.setCurrent("livepush-mixer")
            run()
        }
        thread.start()
    }

    func stop() {
        guard running.exchange(false, ordering: .sequentiallyConsistent) else { return }
        finished.wait()
    }

    func add(_ sink: EncodedMediaSink) { sinks.withLock { $0[ObjectIdentifier(sink)] = sink } }
    func remove(_ sink: EncodedMediaSink) { _ = sinks.withLock { $0.removeValue(forKey: ObjectIdentifier(sink)) } }

    /// Makes `source` the one the mixer asks for `kind`'s samples (nil: none, silence).
    func setPullSource(_ source: (any AudioPullSource)?, for kind: AudioSourceKind) {
        pullSources.withLock { $0[kind] = source }
    }

    /// The volume of `kind` in percent (100 when never set).
    func volume(for kind: AudioSourceKind) -> Int { state.withLock { Int((($0.volumes[kind] ?? 1) * 100).rounded()) } }

    /// Volume of a source in percent: 100 unchanged, 0 silent, up to 400 amplified.
    func setVolume(_ percent: Int, for source: AudioSourceKind) {
        state.withLock { $0.volumes[source] = Float(max(0, min(400, percent))) / 100 }
    }

    /// Silence instead of the mix; frames keep flowing so timestamps stay continuous.
    func setMuted(_ muted: Bool) { state.withLock { $0.muted = muted } }

    /// Silence instead of one source (its level is still measured); the others go on.
    func setMuted(_ muted: Bool, source: AudioSourceKind) {
        state.withLock { state in
            if muted { state.mutedSources.insert(source) } else { state.mutedSources.remove(source) }
        }
    }

    /// The mute switches and volumes (percent) set now.
    var controls: AudioControls {
        state.withLock { state in
            AudioControls(allMuted: state.muted, mutedSources: state.mutedSources, sources: Set(state.sources.keys),
                          volumePercent: Dictionary(uniqueKeysWithValues: AudioSourceKind.allCases.map {
                              ($0, Int(((state.volumes[$0] ?? 1) * 100).rounded()))
                          }))
        }
    }

    /// Reports the microphone's level every `intervalMs` (0 stops).
    func setLevelInterval(ms intervalMs: Int) { state.withLock { $0.levelIntervalMs = max(0, intervalMs) } }

    /// Each source's level as sent (after its volume and mute), 0...100, over the frames mixed since
    /// the last call; sources with no samples are absent.
    func takeLevels() -> [AudioSourceKind: Int] {
        state.withLock { state in
            defer {
                state.sentEnergy = [:]
                state.sentFrames = 0
            }
            let frames = Double(max(1, state.sentFrames))
            return state.sentEnergy.mapValues { Self.level(meanSquare: $0 / frames) }
        }
    }

    /// Frames mixed and AAC bytes encoded since the start.
    var counters: (frames: Int, bytes: Int) { state.withLock { ($0.framesMixed, $0.bytesEncoded) } }

    /// Samples of `source`: interleaved float at `rateHz` with `channels`, the first one captured
    /// at `ptsNs` (CLOCK_MONOTONIC). Called from any thread.
    func push(_ samples: [Float], rateHz: Int, channels: Int, ptsNs: UInt64, from source: AudioSourceKind) {
        guard !samples.isEmpty, channels > 0 else { return }
        if source == .microphone, let onMicrophoneSamples { onMicrophoneSamples(samples, rateHz, channels, ptsNs) }
        let outputRate = settings.sampleRateHz, outputChannels = settings.channels
        let maxDelayNs = UInt64(max(settings.mixDelayMs, settings.maxMixDelayMs)) * 1_000_000
        let first = state.withLock { state -> Bool in
            // In place: a copy of the queue taken out and put back copied its samples every chunk.
            let arrived = state.sources[source, default: SourceQueue()].append(
                samples, rateHz: rateHz, channels: channels, ptsNs: ptsNs, outputRateHz: outputRate,
                outputChannels: outputChannels, mixedUpToNs: state.mixedUpToNs)
            state.gapNs += arrived.gapNs
            if arrived.lateNs > 0 {
                // Too late by `lateNs`: wait that much longer (and 5 ms more), up to the bound.
                state.mixDelayNs = min(maxDelayNs, max(state.mixDelayNs, state.mixDelayNs + arrived.lateNs + 5_000_000))
                state.lastLateNs = MonotonicClock.nowNs()
            }
            defer { state.sawFirstSamples = true }
            return !state.sawFirstSamples
        }
        if first { onFirstSamples?(source) }
    }

    /// Helper audio (AUDIO message) into the desktop source.
    func push(_ audio: Audio) {
        let samples: [Float]
        switch audio.format {
        case .f32le:
            samples = audio.pcm.withUnsafeBytes { raw in
                (0..<raw.count / 4).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
            }
        case .s16le:
            samples = audio.pcm.withUnsafeBytes { raw in
                (0..<raw.count / 2).map { Float(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self))) / 32768 }
            }
        }
        push(samples, rateHz: Int(audio.rateHz), channels: Int(audio.channels), ptsNs: audio.ptsNs, from: .desktop)
    }

    private func run() {
        defer { finished.signal() }
        let frameNs = UInt64(frameSamples) * 1_000_000_000 / UInt64(settings.sampleRateHz)
        let baseDelayNs = UInt64(max(0, settings.mixDelayMs)) * 1_000_000
        var frameIndex: UInt64 = 0
        var levelSum = 0.0, levelCount = 0, levelStartIndex: UInt64 = 0
        while running.load(ordering: .relaxed) {
            let frameStartNs = settings.epochNs + frameIndex * frameNs
            let delayNs = state.withLock { state -> UInt64 in
                // Chunks on time for 5 s: the wait comes down again, 1 ms a frame, to the base.
                if state.mixDelayNs > baseDelayNs && MonotonicClock.nowNs() > state.lastLateNs + 5_000_000_000 {
                    state.mixDelayNs = max(baseDelayNs, state.mixDelayNs - 1_000_000)
                }
                return state.mixDelayNs
            }
            MonotonicClock.sleep(untilNs: frameStartNs + frameNs + delayNs)
            let (micEnergy, levelIntervalMs, micMuted) = mixFrame(startNs: frameStartNs)
            onProcessFrame?(&mix, Int64(frameIndex * frameNs / 1_000_000))
            if levelIntervalMs > 0, let onMicrophoneLevel {
                levelSum += micEnergy
                levelCount += mix.count / settings.channels
                if (frameIndex - levelStartIndex + 1) * frameNs >= UInt64(levelIntervalMs) * 1_000_000 {
                    onMicrophoneLevel(micMuted ? 0 : Self.level(meanSquare: levelCount == 0 ? 0 : levelSum / Double(levelCount)),
                                      micMuted)
                    levelSum = 0
                    levelCount = 0
                    levelStartIndex = frameIndex + 1
                }
            }
            encodeAndDeliver()
            // Behind (the process was stopped or starved): the frames missed are mixed at once. More
            // than `maxBehindMs` behind: silence for them (counted as a hole), then mixing from now.
            frameIndex += 1
            let nowNs = MonotonicClock.nowNs()
            let dueIndex = nowNs > settings.epochNs + delayNs + frameNs
                ? (nowNs - settings.epochNs - delayNs - frameNs) / frameNs : 0
            if dueIndex > frameIndex + UInt64(Self.maxBehindMs) * 1_000_000 / frameNs {
                let skipped = dueIndex - frameIndex
                skip(frames: Int(skipped), frameNs: frameNs)
                frameIndex = dueIndex
            }
        }
        do {
            packets = try encoder.flush()
            try tracks?.flush()
            deliver()
        } catch {
            onEncoderError?(error)
        }
    }

    /// Mixes every source for the 20 ms starting at `startNs` into `mix`; returns the microphone's
    /// energy (sum of squares per sample frame, after its processing, before volume and mute) and the
    /// level interval. Pulled sources are read and the microphone processed outside the lock. The
    /// buffers are the pipeline's own, reused: no allocation per frame (background music's reads aside).
    private func mixFrame(startNs: UInt64) -> (Double, Int, Bool) {
        let count = frameSamples * settings.channels
        let rate = settings.sampleRateHz, channels = settings.channels
        let kinds = Self.kinds
        for index in kinds.indices { hasFrame[index] = false }
        let frameEndNs = startNs + UInt64(frameSamples) * 1_000_000_000 / UInt64(rate)
        state.withLock { state in
            for (index, kind) in kinds.enumerated() where state.sources[kind] != nil {
                // In place (`!` on the dictionary's storage): a copy of the queue would copy its samples.
                capturedFrames[index] = state.sources[kind]!.take(
                    frameSamples: frameSamples, startNs: startNs, rateHz: rate, channels: channels,
                    into: &sourceFrames[index])
                hasFrame[index] = true
            }
            state.mixedUpToNs = frameEndNs
        }
        for (kind, source) in pullSources.withLock({ $0 }) {
            guard let index = kinds.firstIndex(of: kind) else { continue }
            sourceFrames[index] = source.read(frameCount: frameSamples)
            capturedFrames[index] = frameSamples
            hasFrame[index] = true
        }
        var micEnergy = 0.0
        if let mic = kinds.firstIndex(of: .microphone), hasFrame[mic] {
            onMicrophoneFrame?(&sourceFrames[mic], capturedFrames[mic])
            micEnergy = sourceFrames[mic].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(channels)
        }
        let (volumes, mutedSources, muted, levelIntervalMs) = state.withLock { state in
            state.framesMixed += 1
            return (state.volumes, state.mutedSources, state.muted, state.levelIntervalMs)
        }
        mix.removeAll(keepingCapacity: true)
        mix.append(contentsOf: repeatElement(0, count: count))
        // Each source's level as sent (after its volume and mute), for the statistics.
        for (index, kind) in kinds.enumerated() {
            sentEnergyScratch[index] = -1
            frameGains[index] = 0
            guard hasFrame[index], sourceFrames[index].count == count else { continue }
            let volume = mutedSources.contains(kind) ? 0 : volumes[kind] ?? 1
            frameGains[index] = muted ? 0 : volume
            sourceFrames[index].withUnsafeBufferPointer { samples in
                for sample in 0..<count { mix[sample] += samples[sample] * volume }
            }
            if kind == .music, let onMusicFrame { onMusicFrame(sourceFrames[index].map { $0 * volume }) }
            let energy = sourceFrames[index].reduce(0.0) { $0 + Double($1) * Double($1) }
            let sent = muted ? 0 : Double(volume * volume) * energy
            sentEnergyScratch[index] = sent / Double(count)
        }
        state.withLock { state in
            for (index, kind) in kinds.enumerated() where sentEnergyScratch[index] >= 0 {
                state.sentEnergy[kind, default: 0] += sentEnergyScratch[index]
            }
            state.sentFrames += 1
        }
        if muted {
            for index in 0..<count { mix[index] = 0 }
        } else {
            for index in 0..<count { mix[index] = max(-1, min(1, mix[index])) }
        }
        let micMuted = muted || mutedSources.contains(.microphone)
        return (micMuted ? 0 : micEnergy, levelIntervalMs, micMuted)
    }

    /// 0...100 from a mean square: −60 dBFS and below is 0, 0 dBFS is 100.
    static func level(meanSquare: Double) -> Int {
        guard meanSquare > 0 else { return 0 }
        let dBFS = 10 * log10(meanSquare)
        return Int(max(0, min(100, (dBFS + 60) / 60 * 100)).rounded())
    }

    /// How far behind the clock the mixer catches up by mixing; beyond, it skips, so that a starved
    /// mixer adds at most this much to the sound's latency (and to what a stop leaves unmixed).
    /// Just under what a source queue keeps (`SourceQueue.maxQueuedMs`): the samples of a mixer
    /// starved that long are still there, and mixing them costs little. At 300 ms, a machine
    /// busy enough to starve the mixer replaced captured sound with silence: `livepush-bench load`
    /// on a machine already at a load of 20 found 42.5 s of holes at nginx with 300 ms, 22.0 and
    /// 14.7 s with 900 ms (runs taken in turn).
    static let maxBehindMs = 900

    /// Silence for `frames` 20 ms intervals, encoded at once without mixing; counted as a hole.
    private func skip(frames: Int, frameNs: UInt64) {
        do {
            try encoder.encode([Float](repeating: 0, count: frames * frameSamples * settings.channels), into: &packets)
            try tracks?.encodeSilence(frames: frames)
            deliver()
        } catch {
            onEncoderError?(error)
        }
        state.withLock { $0.gapNs += UInt64(frames) * frameNs }
    }

    private func encodeAndDeliver() {
        do {
            try encoder.encode(mix, into: &packets)
            if let tracks {
                let kinds = Self.kinds
                try tracks.encode(frame: { kind in
                    let index = kinds.firstIndex(of: kind)!
                    return hasFrame[index] ? sourceFrames[index] : nil
                }, gain: { kind in frameGains[kinds.firstIndex(of: kind)!] })
            }
            deliver()
        } catch {
            onEncoderError?(error)
        }
    }

    private func deliver() {
        guard !packets.isEmpty else { return }
        var targets = sinkList
        sinkList = []
        targets.removeAll(keepingCapacity: true)
        sinks.withLock { for sink in $0.values { targets.append(sink) } }
        state.withLock { state in
            for packet in packets { state.bytesEncoded += packet.payload.count }
        }
        for (index, packet) in packets.enumerated() {
            let ptsMs = packet.pts * 1000 / Int64(settings.sampleRateHz)
            if let tracks {
                let beside = tracks.packets(beside: packet, at: index)
                for sink in targets { sink.receiveAudio(packet, ptsMs: ptsMs, sourceTracks: beside) }
            } else {
                for sink in targets { sink.receiveAudio(packet, ptsMs: ptsMs) }
            }
        }
        targets.removeAll(keepingCapacity: true)
        sinkList = targets
        packets.removeAll(keepingCapacity: true)
    }
}

/// One source's samples waiting to be mixed, already in the output format, with the capture
/// time of the first one. Reading is continuous; the capture times only re-anchor it when it
/// runs dry, jumps, or drifts more than `toleranceMs` from where it should be.
struct SourceQueue {
    private var samples: [Float] = []
    private var headPtsNs: UInt64 = 0
    private var resampler: AudioResampler?
    private static let toleranceMs: UInt64 = 15
    private static let maxQueuedMs = 1000
    /// Silence the mixer has put in for this source since its samples last reached it, ns: a hole
    /// once the source delivers again (up to `maxGapNs`; longer, the source was away, not late).
    private var pendingGapNs: UInt64 = 0
    private static let maxGapNs: UInt64 = 5_000_000_000
    /// Whether any of its samples was mixed yet (the silence before a source's first samples is no hole).
    private var mixedAny = false

    /// What a chunk's arrival tells: the hole it closes (ns of silence mixed since the source's last
    /// samples), and how much of it came too late (ns before `mixedUpToNs`, the mixer's frontier).
    struct Arrival {
        var gapNs: UInt64 = 0
        var lateNs: UInt64 = 0
    }

    @discardableResult
    mutating func append(_ input: [Float], rateHz: Int, channels: Int, ptsNs: UInt64,
                         outputRateHz: Int, outputChannels: Int, mixedUpToNs: UInt64 = 0) -> Arrival {
        var arrival = Arrival()
        if pendingGapNs > 0 {
            if pendingGapNs <= Self.maxGapNs { arrival.gapNs = pendingGapNs }
            pendingGapNs = 0
        }
        if resampler?.inputRateHz != rateHz || resampler?.inputChannels != channels {
            resampler = try? AudioResampler(inputRateHz: rateHz, inputChannels: channels,
                                            outputRateHz: outputRateHz, outputChannels: outputChannels)
        }
        guard let resampler else { return arrival }
        let queuedNs = UInt64(samples.count / outputChannels) * 1_000_000_000 / UInt64(outputRateHz)
        let expectedNs = headPtsNs + queuedNs
        let jumped = ptsNs > expectedNs + Self.toleranceMs * 1_000_000 || ptsNs + Self.toleranceMs * 1_000_000 < expectedNs
        let restart = samples.isEmpty || jumped
        // Dry, or a discontinuity (a device came back, a helper restarted): start again here.
        if restart { samples.removeAll(keepingCapacity: true) }
        let chunkStartNs = restart ? ptsNs : expectedNs
        if mixedUpToNs > chunkStartNs { arrival.lateNs = mixedUpToNs - chunkStartNs }
        // Converted straight onto the end of the queue (no array per chunk); a chunk libswresample
        // refuses is left out (after a restart the queue is then dry, and the next chunk starts it).
        guard (try? resampler.convert(input, appendingTo: &samples)) != nil else { return arrival }
        if restart { headPtsNs = ptsNs }
        let maxValues = Self.maxQueuedMs * outputRateHz / 1000 * outputChannels
        if samples.count > maxValues {
            let dropFrames = (samples.count - maxValues) / outputChannels
            samples.removeFirst(dropFrames * outputChannels)
            headPtsNs += UInt64(dropFrames) * 1_000_000_000 / UInt64(outputRateHz)
        }
        return arrival
    }

    /// `frameSamples` sample frames for the interval starting at `startNs`: silence where the
    /// source has nothing for it.
    /// Fills `output` with the frame starting at `startNs`; returns how many of its sample frames
    /// came from the queue (the rest is silence).
    @discardableResult
    mutating func take(frameSamples: Int, startNs: UInt64, rateHz: Int, channels: Int, into output: inout [Float]) -> Int {
        output.removeAll(keepingCapacity: true)
        output.append(contentsOf: repeatElement(0, count: frameSamples * channels))
        guard !samples.isEmpty else {
            if mixedAny { pendingGapNs += UInt64(frameSamples) * 1_000_000_000 / UInt64(rateHz) }
            return 0
        }
        let offsetNs = Int64(bitPattern: startNs &- headPtsNs)
        var skip = 0, lead = 0
        if abs(offsetNs) > Int64(Self.toleranceMs) * 1_000_000 {
            let offsetFrames = Int(offsetNs * Int64(rateHz) / 1_000_000_000)
            if offsetFrames > 0 { skip = offsetFrames } else { lead = min(frameSamples, -offsetFrames) }
        }
        let available = samples.count / channels
        skip = min(skip, available)
        let copyFrames = min(frameSamples - lead, available - skip)
        if copyFrames > 0 {
            for index in 0..<(copyFrames * channels) { output[lead * channels + index] = samples[skip * channels + index] }
        }
        if copyFrames > 0 { mixedAny = true }
        if mixedAny { pendingGapNs += UInt64(frameSamples - max(0, copyFrames)) * 1_000_000_000 / UInt64(rateHz) }
        let consumed = skip + max(0, copyFrames)
        samples.removeFirst(consumed * channels)
        headPtsNs += UInt64(consumed) * 1_000_000_000 / UInt64(rateHz)
        return max(0, copyFrames)
    }
}
