import Foundation

/// What ffprobe and ffmpeg say about a recording: the reader a viewer would use.
public enum MediaProbe {
    public struct Failed: Error, CustomStringConvertible {
        public let result: CommandResult
        public var description: String { "\(result)" }
    }

    /// The first video stream's fields (and the format's duration and size), counting frames by decoding.
    public static func videoStream(_ path: String) throws -> [String: String] {
        let result = try ProcessRunner.run("ffprobe", [
            "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
            "stream=codec_name,width,height,r_frame_rate,nb_read_frames,color_space,color_range,has_b_frames"
                + ":format=duration,size",
            "-of", "default=noprint_wrappers=1", path,
        ])
        guard result.exitCode == 0 else { throw Failed(result: result) }
        return Dictionary(result.standardOutput.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: "=", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }, uniquingKeysWith: { $1 })
    }

    /// Each packet of `stream` ("v:0", "a:0") in `path`, in file order: its time, its duration and
    /// whether it is a keyframe (ffprobe's packet entries).
    public static func packets(_ path: String, stream: String) throws -> [(timeS: Double, durationS: Double, key: Bool)] {
        let result = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries",
                                                       "packet=pts_time,duration_time,flags", "-of", "csv=p=0", path])
        guard result.exitCode == 0 else { throw Failed(result: result) }
        return result.standardOutput.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count >= 3, let time = Double(fields[0]) else { return nil }
            return (time, Double(fields[1]) ?? 0, fields[2].contains("K"))
        }
    }

    /// The video packets the container holds (ffprobe -count_packets: read, not decoded).
    public static func packetCount(_ path: String) throws -> Int {
        try countField(path, "-count_packets", "nb_read_packets")
    }

    /// The video frames ffprobe decodes from the file.
    public static func decodedFrameCount(_ path: String) throws -> Int {
        try countField(path, "-count_frames", "nb_read_frames")
    }

    private static func countField(_ path: String, _ option: String, _ field: String) throws -> Int {
        let result = try ProcessRunner.run("ffprobe", ["-v", "error", option, "-select_streams", "v:0",
                                                      "-show_entries", "stream=\(field)", "-of", "csv=p=0", path])
        let text = result.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
        guard result.exitCode == 0, let count = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw Failed(result: result)
        }
        return count
    }

    /// ffmpeg's output arguments for a decode check (decode everything, write nothing), for the tests
    /// that run their own: the pictures keep the stream's time base, as `decodeErrors` explains.
    public static let nullOutput = ["-enc_time_base:v", "-1", "-f", "null", "-"]

    /// What ffmpeg reports decoding every stream of `path` to nothing (`-v error`): empty for a
    /// clean file. A file ffmpeg cannot open at all is an error, never an empty report.
    ///
    /// `-enc_time_base:v -1` keeps each decoded picture in its input stream's time base (FLV: 1 ms)
    /// on the way to the null muxer. Without it the pictures go out in 1/fps, and a file whose
    /// earliest stream starts half a frame off the video's grid (a late viewer's: its audio starts
    /// before its first keyframe) rounds two pictures 33 and 34 ms apart onto one tick, which the
    /// muxer reports as "non monotonically increasing dts" every third frame although every picture
    /// decoded. Decoder errors and video timestamps that really repeat are still reported.
    /// The start time of the first audio stream, s (ffprobe's `start_time`).
    public static func audioStartTime(_ path: String) throws -> Double {
        let result = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries",
                                                       "stream=start_time", "-of", "csv=p=0", path])
        guard result.exitCode == 0, let start = Double(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw Failed(result: result) }
        return start
    }

    /// Every video frame's presentation time, s, in decoding order (ffprobe's `pts_time`; it decodes
    /// them all: minutes of 1080p need a longer `timeoutSeconds`).
    public static func videoFrameTimes(_ path: String, timeoutSeconds: Double = 30) throws -> [Double] {
        let result = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                       "frame=pts_time", "-of", "csv=p=0", path],
                                           timeoutSeconds: timeoutSeconds)
        guard result.exitCode == 0 else { throw Failed(result: result) }
        return result.standardOutput.split(separator: "\n").compactMap {
            Double($0.trimmingCharacters(in: .punctuationCharacters.union(.whitespaces)))
        }
    }

    public static func decodeErrors(_ path: String) throws -> String {
        let result = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path] + nullOutput)
        guard result.exitCode == 0 else { throw Failed(result: result) }
        return result.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// True for what ffmpeg says about a file that simply stops (the tail a `kill -9` cut off), as
    /// opposed to damage inside it.
    public static func isTruncatedTail(_ line: String) -> Bool {
        ["partial file", "File ended prematurely", "Truncating packet", "truncated", "End of file"].contains {
            line.localizedCaseInsensitiveContains($0)
        }
    }

    /// The first video stream's bitrate in each second of stream time (kbps): the sizes of its
    /// packets as ffprobe reads them, summed per whole second of their timestamps.
    public static func videoKbpsPerSecond(_ path: String) throws -> [Int] {
        let result = try ProcessRunner.run("ffprobe", [
            "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,size", "-of", "csv=p=0", path,
        ])
        guard result.exitCode == 0 else { throw Failed(result: result) }
        var bytesPerSecond: [Int] = []
        for line in result.standardOutput.split(separator: "\n") {
            let fields = line.split(separator: ",")
            guard fields.count == 2, let seconds = Double(fields[0]), let size = Int(fields[1]), seconds >= 0 else {
                continue
            }
            let second = Int(seconds)
            while bytesPerSecond.count <= second { bytesPerSecond.append(0) }
            bytesPerSecond[second] += size
        }
        return bytesPerSecond.map { $0 * 8 / 1000 }
    }

    /// Frame `index` of the first video stream, decoded to RGB24 (width x height x 3 bytes).
    public static func decodedRGB(_ path: String, frame index: Int) throws -> [UInt8] {
        let raw = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("frame")).path + ".rgb"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let result = try ProcessRunner.run("ffmpeg", [
            "-nostdin", "-v", "error", "-y", "-i", path, "-vf", "select=eq(n\\,\(index))", "-frames:v", "1",
            "-f", "rawvideo", "-pix_fmt", "rgb24", raw,
        ])
        guard result.exitCode == 0 else { throw Failed(result: result) }
        return [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: raw))) ?? Data())
    }
}

/// The X11 test client that paints known pixels (tools/testclients/x11-paint.c) on the test Xvfb.
public enum X11Painter {
    /// Starts it with `arguments` (geometry and pattern) and waits until its pixels are on screen.
    /// Returns it and its window id. Close its input (`closeInput`) to end it.
    public static func start(_ arguments: [String]) throws -> (painter: RunningCommand, window: String) {
        let painter = try ProcessRunner.start(try Repository.x11Painter(),
                                              ["--display", try TestEnvironment.display(), "--override-redirect"]
                                                + arguments, interactive: true)
        guard let ready = painter.waitForLine(startingWith: "ready ") else {
            throw MediaProbe.Failed(result: painter.finish())
        }
        return (painter, String(ready.split(separator: " ")[1].dropFirst("window=".count)))
    }

    /// A window's pixels as the test X server has them (ffmpeg's x11grab of that window), RGB24;
    /// nil while it cannot be grabbed (not mapped yet, or gone).
    public static func windowPixels(_ windowID: String) throws -> [UInt8]? {
        let raw = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("window")).path + ".rgb"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let grab = try ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "x11grab", "-window_id", windowID,
                                                    "-i", try TestEnvironment.display(), "-frames:v", "1",
                                                    "-f", "rawvideo", "-pix_fmt", "rgb24", raw])
        guard grab.exitCode == 0 else { return nil }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
    }
}
