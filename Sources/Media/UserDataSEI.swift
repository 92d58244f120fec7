import CFFmpeg

/// H.264 SEI `user_data_unregistered` messages (payload type 5) attached to a picture before it
/// is encoded: libavcodec's libx264 wrapper (with `udu_sei`, which `H264Encoder` sets) writes
/// each `AV_FRAME_DATA_SEI_UNREGISTERED` side data of a frame as one SEI message in that
/// frame's access unit, so no packet is edited by hand.
public enum UserDataSEI {
    /// The most bytes of user data one message carries (after the 16-byte UUID).
    public static let maxPayloadBytes = 4096
}

extension VideoFrame {
    /// Attaches `payloads` (each: a 16-byte UUID, then the user data) to be written as SEI
    /// messages into this picture's access unit; replaces any attached before.
    public func setUserDataSEI(_ payloads: [[UInt8]]) throws(MediaError) {
        clearUserDataSEI()
        for payload in payloads {
            guard payload.count >= 16,
                  let side = av_frame_new_side_data(frame, AV_FRAME_DATA_SEI_UNREGISTERED, payload.count)
            else { throw .ffmpeg("av_frame_new_side_data(SEI)", CFFmpeg_AVERROR(ENOMEM)) }
            payload.withUnsafeBufferPointer { side.pointee.data.update(from: $0.baseAddress!, count: payload.count) }
        }
    }

    /// Removes the SEI messages attached to this picture (after it was encoded).
    public func clearUserDataSEI() {
        av_frame_remove_side_data(frame, AV_FRAME_DATA_SEI_UNREGISTERED)
    }

    /// Whether SEI messages are attached.
    public var hasUserDataSEI: Bool { av_frame_get_side_data(frame, AV_FRAME_DATA_SEI_UNREGISTERED) != nil }
}
