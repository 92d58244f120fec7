import CFFmpeg

/// x264's speed/quality presets a live encode can use, fastest first. Slower presets than medium
/// cannot keep 1080p30 on a desktop CPU and are left out.
public enum X264Preset: String, CaseIterable, Sendable, Codable {
    case ultrafast, superfast, veryfast, faster, fast, medium
}

/// The H.264 profile of the stream (what a decoder must support). Baseline has no B-frames and no
/// CABAC (x264 writes it as Constrained Baseline); high adds the 8x8 transform.
public enum H264Profile: String, CaseIterable, Sendable, Codable {
    case baseline, main, high

    /// libavcodec's number for it, for encoders other than libx264.
    var ffmpegProfile: Int32 {
        switch self {
        case .baseline: 578  // FF_PROFILE_H264_CONSTRAINED_BASELINE
        case .main: 77  // FF_PROFILE_H264_MAIN
        case .high: 100  // FF_PROFILE_H264_HIGH
        }
    }
}

/// x264's tunings. zerolatency (the default) turns off the lookahead and B-frames and uses sliced
/// threads, so a frame leaves the encoder as soon as it is encoded; the others are x264's
/// psychovisual tunings for kinds of content and add a lookahead (more latency, more memory).
public enum X264Tune: String, CaseIterable, Sendable, Codable {
    case zerolatency, film, animation, grain, stillimage, fastdecode
}

/// How x264 spends its effort: preset, profile, tune and threads. The defaults are what LivePush
/// has always used (veryfast, x264's own profile choice, zerolatency, threads chosen by x264).
public struct H264EncoderTuning: Equatable, Sendable {
    public var preset: X264Preset = .veryfast
    /// nil: the encoder's own choice (high for x264 at 4:2:0 8-bit).
    public var profile: H264Profile?
    /// nil: none (x264's defaults for the preset, with lookahead and frame threads).
    public var tune: X264Tune? = .zerolatency
    /// Encoder threads; 0 lets x264 choose (about 1.5 x the cores).
    public var threads: Int = 0

    public static let threadsRange = 0...64

    public init(preset: X264Preset = .veryfast, profile: H264Profile? = nil, tune: X264Tune? = .zerolatency,
                threads: Int = 0) {
        self.preset = preset
        self.profile = profile
        self.tune = tune
        self.threads = threads
    }
}

extension H264Encoder {
    /// Applies the tuning and the rate control of `settings` to a context not yet opened: libx264's
    /// own options by name, the generic profile and thread count for the other encoders.
    static func applyTuning(_ settings: H264EncoderSettings, to context: UnsafeMutablePointer<AVCodecContext>) {
        let tuning = settings.tuning
        // 0 keeps each encoder's default (libx264: automatic, about 1.5 x the cores).
        if tuning.threads > 0 { context.pointee.thread_count = Int32(tuning.threads) }
        guard settings.encoder == .libx264 else {
            if let profile = tuning.profile { context.pointee.profile = profile.ffmpegProfile }
            return
        }
        let options = context.pointee.priv_data
        _ = av_opt_set(options, "preset", tuning.preset.rawValue, 0)
        if let tune = tuning.tune { _ = av_opt_set(options, "tune", tune.rawValue, 0) }
        if let profile = tuning.profile { _ = av_opt_set(options, "profile", profile.rawValue, 0) }
        // Frame side data AV_FRAME_DATA_SEI_UNREGISTERED becomes SEI messages (`UserDataSEI`).
        _ = av_opt_set_int(options, "udu_sei", 1, 0)
        if let crf = settings.crf {
            // Constant quality (a recording of its own quality): no bitrate, no VBV, no filler.
            context.pointee.bit_rate = 0
            context.pointee.rc_max_rate = 0
            context.pointee.rc_buffer_size = 0
            _ = av_opt_set(options, "crf", String(crf), 0)
            _ = av_opt_set(options, "x264-params", "force-cfr=1:repeat-headers=1", 0)
        } else {
            // Repeat SPS/PPS before every keyframe: a player joining a live stream can start there.
            // Hard CBR by filler data, not by `nal-hrd=cbr`: with NAL HRD on, x264 refuses to change
            // the VBV ("VBV parameters cannot be changed when NAL HRD is in use", hidden by our quiet
            // logging), so `setBitrate` did nothing and auto bitrate never left the initial rate.
            _ = av_opt_set(options, "x264-params", "filler=1:force-cfr=1:repeat-headers=1", 0)
        }
    }
}
