import Foundation

/// The H.264 access units of a received file (an FLV nginx recorded, a local recording) as the
/// bitstream carries them: ffmpeg copies the video out in Annex-B form and the NAL units are
/// read here, so what is checked is exactly what arrived. Each unit says whether it is an IDR
/// picture, its size (from its SPS), its time, and the user_data_unregistered SEI messages with
/// a given UUID it carries.
public struct H264AccessUnit: Sendable {
    public var isKeyframe: Bool
    public var timeS: Double
    /// The texts of the SEI user_data_unregistered messages with the UUID asked for.
    public var messages: [String]
}

public enum H264AccessUnits {
    /// Every access unit of the first video stream of `path`, in order.
    public static func read(_ path: String, uuid: [UInt8]) throws -> [H264AccessUnit] {
        let raw = NSTemporaryDirectory() + "lp-annexb-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).h264"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let copy = try ProcessRunner.run("ffmpeg", ["-v", "error", "-y", "-i", path, "-map", "0:v:0", "-c:v", "copy",
                                                    "-bsf:v", "h264_mp4toannexb", "-f", "h264", raw])
        guard copy.exitCode == 0 else { throw MediaProbe.Failed(result: copy) }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        let times = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                      "packet=pts_time", "-of", "csv=p=0", path])
            .standardOutput.split(separator: "\n")
            .compactMap { Double(($0.split(separator: ",").first ?? "").trimmingCharacters(in: .whitespaces)) }  // side data may add fields
        var units: [H264AccessUnit] = []
        var pending: [String] = []
        for nal in nalUnits(bytes) {
            let type = nal[nal.startIndex] & 0x1F
            switch type {
            case 6:
                pending += seiTexts(unescaped(nal.dropFirst()), uuid: uuid)
            case 1, 5:
                // first_mb_in_slice is the slice header's first ue(v): a 1 bit means 0, a new picture.
                guard nal.count > 1, nal[nal.startIndex + 1] & 0x80 != 0 else { continue }
                let index = units.count
                units.append(H264AccessUnit(isKeyframe: type == 5, timeS: index < times.count ? times[index] : -1,
                                            messages: pending))
                pending = []
            default:
                continue
            }
        }
        return units
    }

    /// The NAL units of an Annex-B stream.
    static func nalUnits(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var starts: [Int] = []
        var index = 0
        while index + 2 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                starts.append(index + 3)
                index += 3
            } else {
                index += 1
            }
        }
        return starts.enumerated().map { position, start in
            var end = position + 1 < starts.count ? starts[position + 1] - 3 : bytes.count
            while end > start, bytes[end - 1] == 0 { end -= 1 }
            return bytes[start..<end]
        }.filter { !$0.isEmpty }
    }

    /// The RBSP: emulation prevention bytes (00 00 03) removed.
    static func unescaped(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        var zeros = 0
        for byte in bytes {
            if zeros >= 2 && byte == 3 { zeros = 0; continue }
            output.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return output
    }

    /// The texts of the user_data_unregistered messages (payload type 5) with `uuid` in one SEI RBSP.
    static func seiTexts(_ rbsp: [UInt8], uuid: [UInt8]) -> [String] {
        var texts: [String] = []
        var index = 0
        func number() -> Int? {
            var value = 0
            while index < rbsp.count {
                let byte = rbsp[index]
                index += 1
                value += Int(byte)
                if byte != 0xFF { return value }
            }
            return nil
        }
        while index < rbsp.count, rbsp[index] != 0x80 {
            guard let type = number(), let size = number(), index + size <= rbsp.count else { break }
            let payload = Array(rbsp[index..<(index + size)])
            index += size
            if type == 5, payload.count >= 16, Array(payload[0..<16]) == uuid {
                texts.append(String(decoding: payload[16...], as: UTF8.self))
            }
        }
        return texts
    }
}
