import Foundation
import Media

/// The pixel layouts `LivePusher.sendVideoFrame` takes.
public enum ExternalPixelFormat: String, Sendable, CaseIterable {
    /// Y, U and V planes; U and V at half width and height (rounded up). BT.709, limited range.
    case i420
    /// Y plane, then interleaved U V at half width and height (rounded up). BT.709, limited range.
    case nv12
    /// 4 bytes a pixel, B G R A in memory (alpha ignored): what most renderers read back.
    case bgra

    var planeCount: Int { self == .i420 ? 3 : self == .nv12 ? 2 : 1 }

    /// Bytes of one row and the rows of `plane` for a picture of `width` x `height`.
    func extent(plane: Int, width: Int, height: Int) -> (rowBytes: Int, rows: Int) {
        let halfWidth = (width + 1) / 2, halfHeight = (height + 1) / 2
        switch (self, plane) {
        case (.bgra, _): return (width * 4, height)
        case (_, 0): return (width, height)
        case (.nv12, _): return (halfWidth * 2, halfHeight)
        default: return (halfWidth, halfHeight)
        }
    }

    var sourceFormat: SourcePixelFormat {
        switch self {
        case .i420: .i420
        case .nv12: .nv12
        case .bgra: .bgrx
        }
    }
}

/// One picture an application rendered itself (`LivePusher.sendVideoFrame`): its planes (valid
/// for the duration of the call only: LivePush copies them), each plane's stride in bytes, and
/// its CLOCK_MONOTONIC capture time.
public struct ExternalVideoFrame {
    public var format: ExternalPixelFormat
    public var width: Int
    public var height: Int
    /// One buffer per plane: I420 three (Y, U, V), NV12 two (Y, UV), BGRA one.
    public var planes: [UnsafeRawBufferPointer]
    /// Bytes from the start of one row to the next, per plane (at least the row's bytes).
    public var strides: [Int]
    /// When the picture was made, CLOCK_MONOTONIC ns (`clock_gettime`), increasing frame to frame.
    public var ptsNs: UInt64

    public init(format: ExternalPixelFormat, width: Int, height: Int, planes: [UnsafeRawBufferPointer], strides: [Int],
                ptsNs: UInt64)
    {
        self.format = format
        self.width = width
        self.height = height
        self.planes = planes
        self.strides = strides
        self.ptsNs = ptsNs
    }

    /// The largest picture taken, either way.
    public static let maxSide = 8192

    /// What is wrong with this frame, or nil when it can be used.
    public var problem: String? {
        guard (1...Self.maxSide).contains(width), (1...Self.maxSide).contains(height) else {
            return "\(width)x\(height) is not a picture size LivePush takes; use 1 to \(Self.maxSide) on each side"
        }
        guard planes.count == format.planeCount, strides.count == format.planeCount else {
            return "\(format.rawValue) needs \(format.planeCount) plane(s) and as many strides; "
                + "got \(planes.count) plane(s) and \(strides.count) stride(s)"
        }
        for plane in 0..<format.planeCount {
            let (rowBytes, rows) = format.extent(plane: plane, width: width, height: height)
            if strides[plane] < rowBytes {
                return "plane \(plane)'s stride \(strides[plane]) is shorter than its row (\(rowBytes) bytes)"
            }
            let needed = strides[plane] * (rows - 1) + rowBytes
            if planes[plane].baseAddress == nil || planes[plane].count < needed {
                return "plane \(plane) has \(planes[plane].count) bytes; \(width)x\(height) \(format.rawValue) "
                    + "with stride \(strides[plane]) needs \(needed)"
            }
        }
        return nil
    }
}

/// The newest picture sent with `sendVideoFrame`, copied into buffers that are reused while the
/// size stays, for the video pipeline to convert at its next tick (as a helper's frame).
final class ExternalFrameSource: @unchecked Sendable {
    private let lock = NSLock()
    private var buffers: [[UInt8]] = []
    private var format = ExternalPixelFormat.bgra
    private var width = 0, height = 0
    private var lastPtsNs: UInt64 = 0
    private var sequence: UInt64 = 0
    private var taken: UInt64 = 0

    /// Keeps a copy of `frame` (already checked); false when its time is not after the last one's.
    func submit(_ frame: ExternalVideoFrame) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard sequence == 0 || frame.ptsNs > lastPtsNs else { return false }
        if buffers.count != frame.format.planeCount { buffers = Array(repeating: [], count: frame.format.planeCount) }
        for plane in 0..<frame.format.planeCount {
            let (rowBytes, rows) = frame.format.extent(plane: plane, width: frame.width, height: frame.height)
            if buffers[plane].count != rowBytes * rows { buffers[plane] = [UInt8](repeating: 0, count: rowBytes * rows) }
            let source = frame.planes[plane].baseAddress!, stride = frame.strides[plane]
            buffers[plane].withUnsafeMutableBytes { destination in
                for row in 0..<rows {
                    (destination.baseAddress! + row * rowBytes).copyMemory(from: source + row * stride, byteCount: rowBytes)
                }
            }
        }
        (format, width, height, lastPtsNs) = (frame.format, frame.width, frame.height, frame.ptsNs)
        sequence += 1
        return true
    }

    /// Converts the newest picture into `picture` if one came since the last call: true when
    /// converted, false when it could not be, nil when there was none new.
    func convertNewest(using converter: FrameConverter, into picture: VideoFrame) -> Bool? {
        lock.lock()
        defer { lock.unlock() }
        guard sequence > taken else { return nil }
        taken = sequence
        var strides: [Int] = []
        for plane in 0..<format.planeCount { strides.append(format.extent(plane: plane, width: width, height: height).rowBytes) }
        return Self.withPlanes(buffers) { planes in
            (try? converter.convert(SourcePicture(format: format.sourceFormat, width: width, height: height, planes: planes,
                                                  strides: strides), into: picture)) != nil
        }
    }

    private static func withPlanes<T>(_ buffers: [[UInt8]], _ body: ([UnsafeRawBufferPointer]) -> T) -> T {
        func nest(_ index: Int, _ planes: [UnsafeRawBufferPointer]) -> T {
            guard index < buffers.count else { return body(planes) }
            return buffers[index].withUnsafeBytes { nest(index + 1, planes + [$0]) }
        }
        return nest(0, [])
    }
}
