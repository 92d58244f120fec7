import Foundation
import Media
import Testing
import TestSupport

/// A sine of `frequencyHz` at `amplitude`, interleaved over `channels`.
private func sine(frequencyHz: Double, rateHz: Int, channels: Int, seconds: Double, amplitude: Float = 0.5) -> [Float] {
    let frames = Int(Double(rateHz) * seconds)
    var samples = [Float](repeating: 0, count: frames * channels)
    for frame in 0..<frames {
        let value = amplitude * Float(sin(2 * Double.pi * frequencyHz * Double(frame) / Double(rateHz)))
        for channel in 0..<channels { samples[frame * channels + channel] = value }
    }
    return samples
}

@Suite(.timeLimit(.minutes(10))) struct AudioResamplerTests {
    @Test func resampling44100To48000KeepsTheToneAndTheDuration() throws {
        let resampler = try AudioResampler(inputRateHz: 44100, inputChannels: 1, outputRateHz: 48000, outputChannels: 2)
        var output: [Float] = []
        let input = sine(frequencyHz: 1000, rateHz: 44100, channels: 1, seconds: 1)
        for start in stride(from: 0, to: input.count, by: 441) {  // 10 ms chunks, as a capture delivers them
            output += try resampler.convert(Array(input[start..<min(input.count, start + 441)]))
        }
        let frames = output.count / 2
        #expect(abs(frames - 48000) < 100, "\(frames) frames out of 1 s at 48000 Hz")
        let left = stride(from: 0, to: output.count, by: 2).map { output[$0] }
        let right = stride(from: 1, to: output.count, by: 2).map { output[$0] }
        #expect(left == right, "mono is copied to both channels")
        #expect(abs(AudioAnalysis.dominantFrequencyHz(Array(left.dropFirst(100)), sampleRateHz: 48000) - 1000) < 2)
    }

    @Test func sameFormatPassesThroughUnchanged() throws {
        let resampler = try AudioResampler(inputRateHz: 48000, inputChannels: 2, outputRateHz: 48000, outputChannels: 2)
        let input = sine(frequencyHz: 440, rateHz: 48000, channels: 2, seconds: 0.02)
        #expect(try resampler.convert(input) == input)
    }

    @Test func nineChannelsAreRefused() {
        #expect(throws: MediaError.self) {
            try AudioResampler(inputRateHz: 48000, inputChannels: 9, outputRateHz: 48000, outputChannels: 2)
        }
    }
}

@Suite(.timeLimit(.minutes(10))) struct AACEncoderTests {
    @Test func audioSpecificConfigIsAACLowComplexityAtTheRateAndChannels() throws {
        // Object type 2 (LC), the rate's index, the channels; FFmpeg appends an explicit
        // "no SBR" sync extension (0x2B7), which players read as plain AAC-LC.
        let stereo48k = try AACEncoder(settings: AACEncoderSettings(sampleRateHz: 48000, channels: 2)).audioSpecificConfig
        #expect(Array(stereo48k.prefix(2)) == [0x11, 0x90], "\(stereo48k)")
        let mono44k = try AACEncoder(settings: AACEncoderSettings(sampleRateHz: 44100, channels: 1)).audioSpecificConfig
        #expect(Array(mono44k.prefix(2)) == [0x12, 0x08], "\(mono44k)")
    }

    @Test func oneSecondBecomesFramesOf1024SamplesAtTheBitrate() throws {
        let encoder = try AACEncoder(settings: AACEncoderSettings(sampleRateHz: 48000, channels: 2, bitrateKbps: 128))
        let input = sine(frequencyHz: 1000, rateHz: 48000, channels: 2, seconds: 1)
        var packets: [EncodedAudioPacket] = []
        for start in stride(from: 0, to: input.count, by: 960 * 2) {  // 20 ms frames
            packets += try encoder.encode(Array(input[start..<start + 960 * 2]))
        }
        packets += try encoder.flush()
        #expect((46...48).contains(packets.count), "\(packets.count) packets")
        #expect(packets.first?.pts == -1024, "the encoder's priming delay")
        #expect(zip(packets, packets.dropFirst()).allSatisfy { $1.pts - $0.pts == 1024 })
        let kbps = packets.reduce(0) { $0 + $1.data.count } * 8 / 1000
        #expect((100...160).contains(kbps), "\(kbps) kbps for 128")
    }

    @Test func unsupportedRateIsRefusedNamingTheRatesToUse() {
        do {
            _ = try AACEncoder(settings: AACEncoderSettings(sampleRateHz: 12345, channels: 2))
            Issue.record("12345 Hz was accepted")
        } catch {
            #expect(error.description.contains("use 44100 or 48000 Hz"))
        }
    }

    @Test func recordingWithAudioHoldsTheToneAndTheVideo() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("av") + ".mp4").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let video = try H264Encoder(settings: H264EncoderSettings(width: 160, height: 120, fps: 25, bitrateKbps: 300))
        let audio = try AACEncoder(settings: AACEncoderSettings(sampleRateHz: 48000, channels: 2))
        let writer = try RecordingWriter(path: path, encoder: video, audioEncoder: audio)
        let frame = try VideoFrame(width: 160, height: 120)
        frame.fillBlack()
        let tone = sine(frequencyHz: 1000, rateHz: 48000, channels: 2, seconds: 2)
        for index in 0..<50 {  // 2 s: a video frame and 40 ms of audio at a time
            for packet in try video.encode(frame, pts: Int64(index)) { try writer.write(packet) }
            for packet in try audio.encode(Array(tone[(index * 1920 * 2)..<((index + 1) * 1920 * 2)])) { try writer.write(packet) }
        }
        for packet in try video.encode(nil, pts: 0) { try writer.write(packet) }
        for packet in try audio.flush() { try writer.write(packet) }
        try writer.finish()
        let samples = try AudioAnalysis.decodeMono(path)
        #expect(abs(Double(samples.count) / 48000 - 2) < 0.1, "\(samples.count) samples")
        #expect(abs(AudioAnalysis.dominantFrequencyHz(Array(samples.dropFirst(4800)), sampleRateHz: 48000) - 1000) < 2)
        #expect(try MediaProbe.videoStream(path)["nb_read_frames"] == "50")
    }
}
