/// The public vocabulary of cameras on PipeWire: what a camera node offers (its formats, sizes and
/// frame rates), the mode chosen among them, and the cameras found. No C type appears here.

/// The picture formats livepush-capture takes from a camera: what webcams send.
public enum CameraFormat: String, CaseIterable, Sendable {
    /// Packed 4:2:2 (Y0 U Y1 V), the raw format of most USB webcams.
    case yuy2 = "YUY2"
    /// Motion JPEG: each frame a JPEG, what webcams send at their larger sizes and rates.
    case mjpeg = "MJPEG"
    /// 4:2:0 with interleaved chroma.
    case nv12 = "NV12"
    /// 4:2:0 planar.
    case i420 = "I420"

    /// The name `--camera-format` takes.
    public var optionName: String { rawValue.lowercased() }

    /// How much a mode in this format costs to take, when two modes are otherwise equal: raw 4:2:0 is
    /// a conversion, YUY2 too, MJPEG a decode first.
    var cost: Int {
        switch self {
        case .nv12: 0
        case .i420: 1
        case .yuy2: 2
        case .mjpeg: 3
        }
    }
}

/// The colour matrix a node says its YUV pictures use (SPA_FORMAT_VIDEO_colorMatrix); most cameras
/// say nothing, and a webcam's YUV is BT.601.
public enum CameraColorMatrix: String, Sendable {
    case unspecified
    case bt601 = "BT.601"
    case bt709 = "BT.709"
    case other
}

/// A frame rate as the node gives it: a fraction of frames per second.
public struct CameraFrameRate: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let numerator: UInt32
    public let denominator: UInt32

    public init(numerator: UInt32, denominator: UInt32) {
        self.numerator = numerator
        self.denominator = max(1, denominator)
    }

    public init(fps: Int) { self.init(numerator: UInt32(max(0, fps)), denominator: 1) }

    public var fps: Double { Double(numerator) / Double(denominator) }

    public static func < (a: Self, b: Self) -> Bool { UInt64(a.numerator) * UInt64(b.denominator) < UInt64(b.numerator) * UInt64(a.denominator) }

    /// "30", "7.5", "29.97".
    public var description: String {
        if numerator % denominator == 0 { return String(numerator / denominator) }
        let hundredths = (UInt64(numerator) * 100 + UInt64(denominator) / 2) / UInt64(denominator)
        let text = "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
        return text.hasSuffix("0") ? String(text.dropLast()) : text
    }
}

/// The sizes of one offer: a single size, or any size in a range (in steps).
public enum CameraSizes: Sendable, Equatable, CustomStringConvertible {
    case fixed(width: Int, height: Int)
    case range(minWidth: Int, minHeight: Int, maxWidth: Int, maxHeight: Int, stepWidth: Int, stepHeight: Int)

    public var description: String {
        switch self {
        case .fixed(let width, let height): return "\(width)x\(height)"
        case .range(let minWidth, let minHeight, let maxWidth, let maxHeight, _, _):
            return "\(minWidth)x\(minHeight)-\(maxWidth)x\(maxHeight)"
        }
    }

    /// The size of this offer nearest to `width` x `height`.
    func nearest(width: Int, height: Int) -> (width: Int, height: Int) {
        switch self {
        case .fixed(let fixedWidth, let fixedHeight): return (fixedWidth, fixedHeight)
        case .range(let minWidth, let minHeight, let maxWidth, let maxHeight, let stepWidth, let stepHeight):
            func clamp(_ value: Int, _ low: Int, _ high: Int, _ step: Int) -> Int {
                let inside = min(max(value, low), high)
                let steps = (inside - low + max(1, step) / 2) / max(1, step)
                return min(high, low + steps * max(1, step))
            }
            return (clamp(width, minWidth, maxWidth, stepWidth), clamp(height, minHeight, maxHeight, stepHeight))
        }
    }
}

/// The frame rates of one offer: a list, or any rate in a range.
public enum CameraFrameRates: Sendable, Equatable, CustomStringConvertible {
    case list([CameraFrameRate])
    case range(min: CameraFrameRate, max: CameraFrameRate)

    public var description: String {
        switch self {
        case .list(let rates): return rates.isEmpty ? "any rate" : rates.map(\.description).joined(separator: "/") + " fps"
        case .range(let low, let high): return "\(low)-\(high) fps"
        }
    }

    /// The rate of this offer nearest to `fps`; on a tie, the higher.
    func nearest(fps: Double) -> CameraFrameRate? {
        switch self {
        case .list(let rates):
            return rates.min { a, b in
                let da = abs(a.fps - fps), db = abs(b.fps - fps)
                return da != db ? da < db : a > b
            }
        case .range(let low, let high):
            if fps <= low.fps { return low }
            if fps >= high.fps { return high }
            return CameraFrameRate(numerator: UInt32(fps * 1000), denominator: 1000).reduced
        }
    }
}

extension CameraFrameRate {
    /// The same rate with the fraction reduced (30000/1000 is 30/1).
    var reduced: CameraFrameRate {
        func gcd(_ a: UInt32, _ b: UInt32) -> UInt32 { b == 0 ? max(1, a) : gcd(b, a % b) }
        let divisor = gcd(numerator, denominator)
        return CameraFrameRate(numerator: numerator / divisor, denominator: denominator / divisor)
    }
}

/// One EnumFormat param of a video node, in one format: what the node can send.
public struct VideoFormatOffer: Sendable, Equatable, CustomStringConvertible {
    /// The format's name: "YUY2", "NV12", "BGRx", "MJPEG", "H264", ...
    public let formatName: String
    /// The format, when livepush-capture takes it from a camera.
    public let cameraFormat: CameraFormat?
    /// Raw video (a pixel format), not a compressed one (MJPEG, H.264).
    public let isRaw: Bool
    public let sizes: CameraSizes
    public let frameRates: CameraFrameRates
    public let colorMatrix: CameraColorMatrix

    public init(formatName: String, cameraFormat: CameraFormat?, isRaw: Bool, sizes: CameraSizes,
                frameRates: CameraFrameRates, colorMatrix: CameraColorMatrix = .unspecified)
    {
        self.formatName = formatName
        self.cameraFormat = cameraFormat
        self.isRaw = isRaw
        self.sizes = sizes
        self.frameRates = frameRates
        self.colorMatrix = colorMatrix
    }

    /// "MJPEG 1280x720 30/15 fps".
    public var description: String { "\(formatName) \(sizes) \(frameRates)" }
}

/// A camera's mode: a format, a size and a frame rate, one of those it offers.
public struct CameraMode: Sendable, Equatable, CustomStringConvertible {
    public let format: CameraFormat
    public let width: Int
    public let height: Int
    public let frameRate: CameraFrameRate
    /// What the node said about its YUV colours (MJPEG is always JPEG's full-range BT.601).
    public let colorMatrix: CameraColorMatrix

    public init(format: CameraFormat, width: Int, height: Int, frameRate: CameraFrameRate,
                colorMatrix: CameraColorMatrix = .unspecified)
    {
        self.format = format
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.colorMatrix = colorMatrix
    }

    /// "MJPEG 1280x720 at 30 fps".
    public var description: String { "\(format.rawValue) \(width)x\(height) at \(frameRate) fps" }
}

/// A camera PipeWire knows: a Video/Source node with the camera role (what WirePlumber makes of
/// every V4L2 or libcamera device), and the modes it offers.
public struct CameraInfo: Sendable, Equatable, CustomStringConvertible {
    public let id: UInt32
    /// `node.name`, stable across restarts: what `--camera NAME` takes.
    public let name: String
    /// `node.description`, e.g. "Integrated Camera (V4L2)".
    public let nodeDescription: String
    /// `object.path` (e.g. `v4l2:/dev/video0`), or "".
    public let objectPath: String
    public let offers: [VideoFormatOffer]

    public init(id: UInt32, name: String, nodeDescription: String, objectPath: String, offers: [VideoFormatOffer]) {
        self.id = id
        self.name = name
        self.nodeDescription = nodeDescription
        self.objectPath = objectPath
        self.offers = offers
    }

    /// "42 'v4l2_input.usb-cam' (USB Camera)".
    public var description: String {
        let text = nodeDescription.isEmpty || nodeDescription == name ? "" : " (\(nodeDescription))"
        return "\(id) '\(name)'\(text)"
    }

    /// Whether `--camera TEXT` names this camera: its id, node.name, object.path or description.
    public func matches(_ text: String) -> Bool {
        text == String(id) || text == name || (!objectPath.isEmpty && text == objectPath) || text == nodeDescription
    }
}

/// Why the cameras could not be listed or the one asked for cannot be used. Each says what to do.
public enum CameraError: Error, Equatable, CustomStringConvertible {
    /// PipeWire could not be reached (the connection's own message says what to do).
    case pipeWire(String)
    /// No camera matches `--camera`.
    case notFound(wanted: String, cameras: [CameraInfo])
    /// No camera at all.
    case noCamera
    /// The camera offers no mode in a format livepush-capture takes (or none in the format asked for).
    case noUsableMode(camera: String, offered: [String], wantedFormat: CameraFormat?)

    public var description: String {
        switch self {
        case .pipeWire(let message):
            return message
        case .notFound(let wanted, let cameras):
            let list = cameras.isEmpty ? "PipeWire has no camera" : "the cameras are: "
                + cameras.map(\.description).joined(separator: ", ")
            let guess = CameraInfo.nearest(to: wanted, in: cameras).map { "did you mean '\($0.name)'? " } ?? ""
            return "no camera '\(wanted)'; \(guess)\(list) (livepush devices lists them)"
        case .noCamera:
            return "PipeWire has no camera (no Video/Source node with the Camera role); plug one in, check that "
                + "WirePlumber sees it (wpctl status), or use --camera with a video node's name"
        case .noUsableMode(let camera, let offered, let wanted):
            let offer = offered.isEmpty ? "offers no video format it names" : "offers " + offered.joined(separator: ", ")
            if let wanted {
                return "camera \(camera) \(offer), not \(wanted.rawValue); choose another --camera-format "
                    + "(yuy2, mjpeg, nv12 or i420) or leave it out"
            }
            return "camera \(camera) \(offer); livepush-capture takes YUY2, MJPEG, NV12 or I420"
        }
    }
}

extension CameraInfo {
    /// What the camera offers, one line per format, sizes largest first: "MJPEG 1920x1080 30 fps,
    /// 1280x720 30/15 fps"; formats livepush-capture does not take are marked so.
    public var formatLines: [String] {
        var order: [String] = []
        var sizes: [String: [VideoFormatOffer]] = [:]
        for offer in offers {
            if sizes[offer.formatName] == nil { order.append(offer.formatName) }
            sizes[offer.formatName, default: []].append(offer)
        }
        return order.map { name in
            let list = sizes[name]!
            func area(_ offer: VideoFormatOffer) -> Int {
                switch offer.sizes {
                case .fixed(let width, let height): return width * height
                case .range(_, _, let width, let height, _, _): return width * height
                }
            }
            let modes = list.sorted { area($0) > area($1) }.map { "\($0.sizes) \($0.frameRates)" }
            return name + " " + modes.joined(separator: ", ") + (list[0].cameraFormat == nil ? " (not taken)" : "")
        }
    }
}
