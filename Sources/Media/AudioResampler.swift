import CFFmpeg

/// Converts interleaved float PCM from one rate and channel count to another through
/// libswresample (its default filter; channels are up- or down-mixed by its matrix).
public final class AudioResampler {
    public let inputRateHz: Int
    public let inputChannels: Int
    public let outputRateHz: Int
    public let outputChannels: Int
    private var context: OpaquePointer?

    public init(inputRateHz: Int, inputChannels: Int, outputRateHz: Int, outputChannels: Int) throws(MediaError) {
        guard (1...8).contains(inputChannels), (1...8).contains(outputChannels), inputRateHz > 0, outputRateHz > 0 else {
            throw .ffmpeg(call: "AudioResampler", code: CFFmpeg_AVERROR(EINVAL),
                          message: "unsupported audio: \(inputRateHz) Hz x \(inputChannels) -> \(outputRateHz) Hz x \(outputChannels)")
        }
        self.inputRateHz = inputRateHz
        self.inputChannels = inputChannels
        self.outputRateHz = outputRateHz
        self.outputChannels = outputChannels
        var inputLayout = AVChannelLayout(), outputLayout = AVChannelLayout()
        av_channel_layout_default(&inputLayout, Int32(inputChannels))
        av_channel_layout_default(&outputLayout, Int32(outputChannels))
        defer {
            av_channel_layout_uninit(&inputLayout)
            av_channel_layout_uninit(&outputLayout)
        }
        var context: OpaquePointer?
        try ffmpegCall("swr_alloc_set_opts2") {
            swr_alloc_set_opts2(&context, &outputLayout, AV_SAMPLE_FMT_FLT, Int32(outputRateHz),
                                &inputLayout, AV_SAMPLE_FMT_FLT, Int32(inputRateHz), 0, nil)
        }
        self.context = context
        // Mono to more channels: the sound in each at its own level (libswresample puts a mono
        // centre into left and right at -3 dB), as a mono microphone is heard.
        if inputChannels == 1 && outputChannels > 1 {
            let matrix = [Double](repeating: 1, count: outputChannels)
            try ffmpegCall("swr_set_matrix") { swr_set_matrix(context, matrix, 1) }
        }
        try ffmpegCall("swr_init") { swr_init(context) }
    }

    deinit { swr_free(&context) }

    /// True when input and output are the same: `convert` then returns its input.
    public var isPassThrough: Bool { inputRateHz == outputRateHz && inputChannels == outputChannels }

    /// Converts `samples` (interleaved, `inputChannels` per frame); returns what came out
    /// (interleaved, `outputChannels` per frame). The resampler keeps a few samples of delay.
    public func convert(_ samples: [Float]) throws(MediaError) -> [Float] {
        if isPassThrough { return samples }
        var output: [Float] = []
        try convert(samples, appendingTo: &output)
        return output
    }

    /// Converts `samples` and appends what came out to `output`, in place: no array of its own
    /// (the microphone's 150 chunks a second go straight into their source's queue).
    public func convert(_ samples: [Float], appendingTo output: inout [Float]) throws(MediaError) {
        if isPassThrough { return output.append(contentsOf: samples) }
        let inputFrames = samples.count / inputChannels
        let capacity = Int(swr_get_out_samples(context, Int32(inputFrames))) + 16
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: capacity * outputChannels))
        let produced = output.withUnsafeMutableBytes { outputBytes -> Int32 in
            samples.withUnsafeBytes { inputBytes -> Int32 in
                let tail = outputBytes.baseAddress! + start * MemoryLayout<Float>.stride
                var outputPlane: UnsafeMutablePointer<UInt8>? = tail.assumingMemoryBound(to: UInt8.self)
                var inputPlane: UnsafePointer<UInt8>? = inputBytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return swr_convert(context, &outputPlane, Int32(capacity), &inputPlane, Int32(inputFrames))
            }
        }
        output.removeLast(output.count - start - max(0, Int(produced)) * outputChannels)
        if produced < 0 { throw .ffmpeg("swr_convert", produced) }
    }
}
