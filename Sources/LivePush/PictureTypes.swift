import Foundation
import Media

/// Where a watermark goes on the stream, in the reference SDK's normalized coordinates:
/// fractions of the output picture's size, from its top left corner. The height follows the
/// image's aspect ratio.
public struct WatermarkPosition: Equatable, Sendable, Codable {
    /// Left edge, 0 (the left of the picture) up to 1.
    public var x: Double
    /// Top edge, 0 (the top of the picture) up to 1.
    public var y: Double
    /// Width as a fraction of the picture's width, above 0 up to 1.
    public var width: Double
    /// 0 (invisible) to 1 (the image as it is, its own alpha kept).
    public var opacity: Double

    public init(x: Double, y: Double, width: Double, opacity: Double = 1) {
        self.x = x
        self.y = y
        self.width = width
        self.opacity = opacity
    }

    /// What is wrong with this position, nil when nothing is.
    public var problem: String? {
        if !(0..<1).contains(x) { return "x \(x) is outside 0 to 1 (a fraction of the picture's width)" }
        if !(0..<1).contains(y) { return "y \(y) is outside 0 to 1 (a fraction of the picture's height)" }
        if !(width > 0 && width <= 1) { return "width \(width) is outside 0 to 1 (a fraction of the picture's width)" }
        if !(0...1).contains(opacity) { return "opacity \(opacity) is outside 0 to 1" }
        return nil
    }
}

/// A watermark from a file: `--watermark FILE@X,Y,W[,OPACITY]`, the `watermarks` key of a
/// configuration file (`{"path": "logo.png", "x": 0.8, "y": 0.05, "width": 0.15, "opacity": 0.7}`).
public struct WatermarkFile: Equatable, Sendable, Codable {
    /// A PNG (alpha kept) or JPEG file.
    public var path: String
    public var position: WatermarkPosition

    public init(path: String, position: WatermarkPosition) {
        self.path = path
        self.position = position
    }

    /// Parses `FILE@X,Y,W[,OPACITY]`; throws a message naming what is wrong.
    public init(parsing text: String) throws(LivePushConfigError) {
        let usage = "use FILE@X,Y,W[,OPACITY] with fractions of the picture, e.g. logo.png@0.8,0.05,0.15,0.7"
        guard let at = text.lastIndex(of: "@"), at != text.startIndex else {
            throw .invalidWatermark(text, reason: "no '@' after the file name; \(usage)")
        }
        let numbers = text[text.index(after: at)...].split(separator: ",", omittingEmptySubsequences: false)
        let values = numbers.map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard (3...4).contains(values.count), let x = values[0], let y = values[1], let width = values[2],
              values.count == 3 || values[3] != nil
        else { throw .invalidWatermark(text, reason: usage) }
        let position = WatermarkPosition(x: x, y: y, width: width, opacity: values.count == 4 ? values[3]! : 1)
        if let problem = position.problem { throw .invalidWatermark(text, reason: problem) }
        self.init(path: String(text[..<at]), position: position)
    }

    private enum CodingKeys: String, CodingKey { case path, x, y, width, opacity }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        path = try container.decode(String.self, forKey: .path)
        position = WatermarkPosition(x: try container.decode(Double.self, forKey: .x),
                                     y: try container.decode(Double.self, forKey: .y),
                                     width: try container.decode(Double.self, forKey: .width),
                                     opacity: try container.decodeIfPresent(Double.self, forKey: .opacity) ?? 1)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(position.x, forKey: .x)
        try container.encode(position.y, forKey: .y)
        try container.encode(position.width, forKey: .width)
        try container.encode(position.opacity, forKey: .opacity)
    }
}

/// The outgoing picture handed to `onProcessVideoFrame` just before it is encoded (after the
/// placeholder, the mirror and the watermarks): its three I420 planes, writable in place.
/// Y is `width` x `height` bytes, U and V `width / 2` x `height / 2`; a row of each plane starts
/// `yStride`, `uStride`, `vStride` bytes after the one before (strides can be larger than the
/// row). Limited range BT.601: Y 16 black to 235 white, U and V 128 neutral. The pointers are
/// valid only during the callback, which runs on the video thread: return well within a frame.
public struct VideoProcessFrame {
    public let width: Int
    public let height: Int
    public let y: UnsafeMutablePointer<UInt8>
    public let u: UnsafeMutablePointer<UInt8>
    public let v: UnsafeMutablePointer<UInt8>
    public let yStride: Int
    public let uStride: Int
    public let vStride: Int
    /// The picture's place on the stream's timeline, in ms (the timestamp viewers get).
    public let ptsMs: Int64

    init(planes: I420Planes, ptsMs: Int64) {
        width = planes.width
        height = planes.height
        y = planes.y
        u = planes.u
        v = planes.v
        yStride = planes.yStride
        uStride = planes.uStride
        vStride = planes.vStride
        self.ptsMs = ptsMs
    }
}
