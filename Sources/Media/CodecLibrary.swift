import CFFmpeg

/// The H.264 encoders LivePush can drive through libavcodec, by their libavcodec names.
public enum H264EncoderName: String, CaseIterable, Sendable {
    /// Software x264: the default, on every machine with Debian's libavcodec.
    case libx264
    /// Cisco's OpenH264, software; Debian builds libavcodec with it.
    case libopenh264
    /// Intel/AMD hardware through VA-API; needs a GPU and its driver.
    case vaapi = "h264_vaapi"
    /// NVIDIA hardware; needs the NVIDIA driver.
    case nvenc = "h264_nvenc"
}

/// Facts about the FFmpeg libraries this process is linked with.
public enum CodecLibrary {
    /// Whether libavcodec has an encoder called `name` (e.g. `libx264`, `aac`).
    ///
    /// An encoder being compiled in does not prove its hardware is present: VA-API and
    /// NVENC are probed by opening them when a pipeline starts.
    public static func hasEncoder(named name: String) -> Bool {
        avcodec_find_encoder_by_name(name) != nil
    }

    /// The long, human-readable name libavcodec gives an encoder, or nil when it has none by that name.
    public static func encoderDescription(named name: String) -> String? {
        guard let codec = avcodec_find_encoder_by_name(name) else { return nil }
        return codec.pointee.long_name.map { String(cString: $0) }
    }

    /// The versions of the linked FFmpeg libraries, as `"avcodec" : "59.37.100"`.
    public static var versions: [(library: String, version: String)] {
        [
            ("avcodec", dotted(avcodec_version())),
            ("avformat", dotted(avformat_version())),
            ("avutil", dotted(avutil_version())),
            ("swscale", dotted(swscale_version())),
            ("swresample", dotted(swresample_version())),
        ]
    }

    /// FFmpeg packs versions as major << 16 | minor << 8 | micro.
    private static func dotted(_ packed: UInt32) -> String {
        "\(packed >> 16).\((packed >> 8) & 0xFF).\(packed & 0xFF)"
    }
}
