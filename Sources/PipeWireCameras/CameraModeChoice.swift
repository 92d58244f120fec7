/// What the user asked of a camera: a size, a frame rate, a format (each optional).
public struct CameraModeRequest: Sendable, Equatable {
    /// `--size`; without it 1280x720, the size most webcams send at 30 fps.
    public var width: Int?
    public var height: Int?
    /// `--fps`, else the pusher's rate (WELCOME), else 30.
    public var fps: Double?
    /// `--camera-format`: only modes in this format.
    public var format: CameraFormat?

    public init(width: Int? = nil, height: Int? = nil, fps: Double? = nil, format: CameraFormat? = nil) {
        self.width = width
        self.height = height
        self.fps = fps
        self.format = format
    }

    public static let defaultWidth = 1280
    public static let defaultHeight = 720
    public static let defaultFPS = 30.0
}

/// Chooses a camera's mode: the size nearest the one asked for first (a picture of the wrong shape is
/// worse than a slower one), then among the modes of that size the frame rate nearest the one asked
/// for, then the cheapest format to take (raw before MJPEG). Pure: tested without a camera.
public enum CameraModeChoice {
    /// The modes `offers` can give, one per offer: each at its size nearest the request and its rate
    /// nearest the request.
    static func candidates(_ offers: [VideoFormatOffer], _ request: CameraModeRequest) -> [CameraMode] {
        let width = request.width ?? CameraModeRequest.defaultWidth
        let height = request.height ?? CameraModeRequest.defaultHeight
        let fps = request.fps ?? CameraModeRequest.defaultFPS
        return offers.compactMap { offer in
            guard let format = offer.cameraFormat, request.format == nil || request.format == format,
                  let rate = offer.frameRates.nearest(fps: fps)
            else { return nil }
            let size = offer.sizes.nearest(width: width, height: height)
            guard size.width > 0, size.height > 0 else { return nil }
            return CameraMode(format: format, width: size.width, height: size.height, frameRate: rate,
                              colorMatrix: offer.colorMatrix)
        }
    }

    /// The mode for `request`, or nil when no offer is in a format livepush-capture takes (or in the
    /// format asked for).
    public static func choose(_ offers: [VideoFormatOffer], _ request: CameraModeRequest) -> CameraMode? {
        let width = request.width ?? CameraModeRequest.defaultWidth
        let height = request.height ?? CameraModeRequest.defaultHeight
        let fps = request.fps ?? CameraModeRequest.defaultFPS
        func sizeDistance(_ mode: CameraMode) -> Int { abs(mode.width - width) + abs(mode.height - height) }
        return candidates(offers, request).min { a, b in
            if sizeDistance(a) != sizeDistance(b) { return sizeDistance(a) < sizeDistance(b) }
            if a.width * a.height != b.width * b.height { return a.width * a.height > b.width * b.height }
            let rateA = abs(a.frameRate.fps - fps), rateB = abs(b.frameRate.fps - fps)
            if rateA != rateB { return rateA < rateB }
            if a.frameRate != b.frameRate { return a.frameRate > b.frameRate }
            return a.format.cost < b.format.cost
        }
    }

    /// The line the helper logs: what was chosen against what was asked.
    public static func describe(_ mode: CameraMode, _ request: CameraModeRequest) -> String {
        let width = request.width ?? CameraModeRequest.defaultWidth
        let height = request.height ?? CameraModeRequest.defaultHeight
        let fps = CameraFrameRate(numerator: UInt32((request.fps ?? CameraModeRequest.defaultFPS) * 1000),
                                  denominator: 1000).reduced
        let asked = "\(width)x\(height) at \(fps) fps" + (request.format.map { " in \($0.rawValue)" } ?? "")
        let exact = mode.width == width && mode.height == height && mode.frameRate == fps
        return "camera mode \(mode) (\(exact ? "as asked" : "the nearest it offers to \(asked)"))"
    }
}
