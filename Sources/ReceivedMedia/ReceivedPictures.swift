import Foundation

/// The pictures of a file a receiver got, decoded by ffmpeg to small grey images (luma as
/// decoded), each with its presentation time: what a viewer would have seen, and when.
public struct ReceivedPictures: Sendable {
    public struct Failed: Error, CustomStringConvertible {
        public let description: String
    }

    public let width: Int
    public let height: Int
    /// Each picture's presentation time in ms, in display order.
    public let timesMs: [Int]
    private let grey: [UInt8]

    public var count: Int { timesMs.count }

    /// Decodes the first video stream of `path`, scaled to `width` pixels wide. A file ffmpeg
    /// cannot decode, or whose picture count and time count differ, is an error.
    public static func decode(_ path: String, width: Int = 128) throws -> ReceivedPictures {
        let times = try run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                 "frame=pts_time", "-of", "csv=p=0", path])
        let timesMs = String(decoding: times, as: UTF8.self).split(separator: "\n").compactMap { line in
            Double(line.trimmingCharacters(in: CharacterSet(charactersIn: " ,"))).map { Int(($0 * 1000).rounded()) }
        }
        let size = try run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                "stream=width,height", "-of", "csv=p=0", path])
        let dimensions = String(decoding: size, as: UTF8.self).split(whereSeparator: { $0 == "," || $0 == "\n" })
            .compactMap { Int($0) }
        guard dimensions.count >= 2, dimensions[0] > 0 else {
            throw Failed(description: "ffprobe gave no picture size for \(path)")
        }
        let height = max(2, (dimensions[1] * width / dimensions[0]) / 2 * 2)
        let grey = try run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:v:0", "-fps_mode",
                                               "passthrough", "-vf", "scale=\(width):\(height),format=gray",
                                               "-f", "rawvideo", "pipe:1"])
        let frames = grey.count / (width * height)
        guard frames == timesMs.count, frames > 0 else {
            throw Failed(description: "\(path): ffmpeg decoded \(frames) pictures, ffprobe timed \(timesMs.count)")
        }
        return ReceivedPictures(width: width, height: height, timesMs: timesMs, grey: [UInt8](grey))
    }

    /// The share of picture `index`'s pixels whose luma is at least `luma`, and the mean x of
    /// those pixels (in pixels of the scaled picture; nil when there are none).
    public func bright(_ index: Int, luma: UInt8) -> (share: Double, centreX: Double?) {
        let start = index * width * height
        var count = 0, sumX = 0
        for y in 0..<height {
            let row = start + y * width
            for x in 0..<width where grey[row + x] >= luma {
                count += 1
                sumX += x
            }
        }
        return (Double(count) / Double(width * height), count == 0 ? nil : Double(sumX) / Double(count))
    }

    /// The share of the pixels of picture `index` in `rows` (of the scaled picture) whose luma
    /// passes `test`.
    public func share(_ index: Int, rows: Range<Int>, _ test: (UInt8) -> Bool) -> Double {
        let rows = rows.clamped(to: 0..<height)
        guard !rows.isEmpty else { return 0 }
        let start = index * width * height
        let count = grey[(start + rows.lowerBound * width)..<(start + rows.upperBound * width)].count(where: test)
        return Double(count) / Double(rows.count * width)
    }

    /// The mean luma of picture `index`.
    public func meanLuma(_ index: Int) -> Double {
        let start = index * width * height
        return Double(grey[start..<(start + width * height)].reduce(0) { $0 + Int($1) }) / Double(width * height)
    }

    /// Runs a program to its end; its standard output, or an error with its standard error.
    private static func run(_ program: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let errorPath = NSTemporaryDirectory() + "received-pictures-\(getpid())-\(UUID().uuidString).err"
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errorPath) }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0 else {
            throw Failed(description: "\(program) \(arguments.joined(separator: " ")) failed "
                + "(status \(process.terminationStatus)): \(errors.suffix(500))")
        }
        return data
    }
}

/// The moving square of `x11-paint ... square BACKGROUND COLOUR SIZE SPEED` (a bright colour on
/// a dark one) in what a receiver got: live when the square is there at full brightness and
/// moves; the placeholder (the last picture dimmed to 40 %) and a frozen picture are not.
public struct PainterSquare: Sendable {
    /// Luma at or above which a pixel belongs to the square (ffcc00 decodes near 184, dimmed
    /// to 40 % near 83; the background 1e2a3a near 50).
    public var squareLuma: UInt8 = 130
    /// The least share of the picture the square covers when it is shown.
    public var minShare: Double
    /// Consecutive live pictures that count as "the screen is back".
    public var runPictures = 8

    public init(minShare: Double) { self.minShare = minShare }

    /// After a fault at `faultMs` (stream time): when the placeholder appeared and when the live,
    /// undimmed, moving square came back after it.
    public struct Recovery: Sendable, CustomStringConvertible {
        public let faultMs: Int
        public let placeholderMs: Int?
        public let liveMs: Int?
        /// From the fault to the first of `runPictures` live pictures after the placeholder.
        public var liveBackMs: Int? { liveMs.map { $0 - faultMs } }
        public var description: String {
            "fault at \(faultMs) ms: placeholder at \(placeholderMs.map { "\($0) ms" } ?? "never"), "
                + "live again at \(liveMs.map { "\($0) ms" } ?? "never")"
        }
    }

    public func recovery(after faultMs: Int, in pictures: ReceivedPictures) -> Recovery {
        let shown = (0..<pictures.count).map { pictures.bright($0, luma: squareLuma) }
        let isSquare = shown.map { $0.share >= minShare && $0.centreX != nil }
        guard let placeholder = (0..<pictures.count).first(where: { pictures.timesMs[$0] >= faultMs && !isSquare[$0] })
        else { return Recovery(faultMs: faultMs, placeholderMs: nil, liveMs: nil) }
        var index = placeholder + 1
        while index + runPictures <= pictures.count {
            let run = index..<index + runPictures
            if run.allSatisfy({ isSquare[$0] }) {
                let moving = zip(run, run.dropFirst()).filter { previous, next in
                    abs((shown[next].centreX ?? 0) - (shown[previous].centreX ?? 0)) >= 0.25
                }.count
                if moving >= runPictures - 2 {
                    return Recovery(faultMs: faultMs, placeholderMs: pictures.timesMs[placeholder],
                                    liveMs: pictures.timesMs[index])
                }
            }
            index += 1
        }
        return Recovery(faultMs: faultMs, placeholderMs: pictures.timesMs[placeholder], liveMs: nil)
    }
}
