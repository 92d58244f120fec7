import Foundation
import Media

/// A recording's audio track per source (issue 34, `--record-tracks`): beside the mix, each of
/// `kinds` is encoded on its own, as it goes into the mix (after its volume and mute), so that an
/// editor can rebalance the voice, the desktop and the music afterwards.
///
/// Owned by the audio pipeline's thread: `encode`, `encodeSilence` and `flush` run there only, fed
/// the same 20 ms frames as the mix's encoder from the pipeline's first frame on, so the k-th packet
/// of every track has the k-th mix packet's timestamp (the encoders count the same samples). A
/// sink gets them beside that mix packet (`EncodedMediaSink.receiveAudio(_:ptsMs:sourceTracks:)`).
final class SourceTracks {
    /// The sources that get a track, in the tracks' order: the microphone, the helper's desktop
    /// audio, the background music. PCM an application sends (`sendPCM`) is in the mix only.
    static let kinds: [AudioSourceKind] = [.microphone, .desktop, .music]

    /// What a player shows for each track (the mix first).
    static let mixTitle = "Mix"
    static func title(of kind: AudioSourceKind) -> String {
        switch kind {
        case .microphone: "Microphone"
        case .desktop: "Desktop audio"
        case .music: "Music"
        case .external: "Application audio"
        }
    }

    static var titles: [String] { kinds.map(title(of:)) }

    private let encoders: [AACEncoder]
    private let frameValues: Int
    /// One track's 20 ms, reused.
    private var scratch: [Float] = []
    /// Each track's packets from the last call, by track.
    private(set) var packets: [[EncodedAudioPacket]]

    init(settings: AACEncoderSettings, frameSamples: Int) throws(MediaError) {
        var encoders: [AACEncoder] = []
        for _ in Self.kinds { encoders.append(try AACEncoder(settings: settings)) }
        self.encoders = encoders
        frameValues = frameSamples * settings.channels
        packets = Array(repeating: [], count: Self.kinds.count)
    }

    /// Encodes one 20 ms frame of each track: `frame(kind)` is the source's samples (nil: it had
    /// none), `gain(kind)` its volume, 0 when muted.
    func encode(frame: (AudioSourceKind) -> [Float]?, gain: (AudioSourceKind) -> Float) throws(MediaError) {
        for (index, kind) in Self.kinds.enumerated() {
            scratch.removeAll(keepingCapacity: true)
            if let samples = frame(kind), samples.count == frameValues {
                let volume = gain(kind)
                scratch.append(contentsOf: samples)
                for sample in 0..<frameValues { scratch[sample] = max(-1, min(1, scratch[sample] * volume)) }
            } else {
                scratch.append(contentsOf: repeatElement(0, count: frameValues))
            }
            try encoders[index].encode(scratch, into: &packets[index])
        }
    }

    /// `frames` 20 ms frames of silence in every track, as the mix's encoder gets after a long stall.
    func encodeSilence(frames: Int) throws(MediaError) {
        let silence = [Float](repeating: 0, count: frames * frameValues)
        for index in encoders.indices { try encoders[index].encode(silence, into: &packets[index]) }
    }

    /// The encoders' last packets, at the end.
    func flush() throws(MediaError) {
        for index in encoders.indices { packets[index] = try encoders[index].flush() }
    }

    /// The tracks' packets that go with the mix's `index`-th packet of the last call (same
    /// timestamp), or none when the encoders are not in step (never expected: same samples in).
    func packets(beside mixPacket: EncodedAudioPacket, at index: Int) -> [EncodedAudioPacket] {
        var beside: [EncodedAudioPacket] = []
        for track in packets {
            guard index < track.count, track[index].pts == mixPacket.pts else { return [] }
            beside.append(track[index])
        }
        return beside
    }
}
