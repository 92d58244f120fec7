import PipeWireCameras

/// Options of a camera stream.
public struct PipeWireCameraOptions: Sendable {
    /// The daemon, or the descriptor the Camera portal's OpenPipeWireRemote gave (then only the
    /// cameras the portal grants are visible).
    public var remote: PipeWireRemote = .daemon(nil)
    /// `--camera`: the node's id, `node.name`, `object.path` or description; nil for the first camera.
    public var camera: String?
    /// How long connecting, finding the camera and negotiating its format may take.
    public var timeoutMs = 5000

    public init() {}
}

/// A camera on PipeWire (a V4L2 or libcamera device as WirePlumber presents it, or what the Camera
/// portal grants): `init` connects and finds the camera and its modes; `start(mode:)` asks for one of
/// them (YUY2, MJPEG, NV12 or I420) and from then on each picture is written into the offered slot in
/// one pass: converted to BGRx (libyuv), decoded to BGRx (MJPEG, libjpeg-turbo), or copied (BT.709
/// NV12/I420), on PipeWire's thread.
public final class PipeWireCameraStream: PipeWireVideoStream {
    /// The camera, with every mode it offers.
    public let camera: CameraInfo

    public init(options: PipeWireCameraOptions) throws(CameraError) {
        PipeWireLibraryOnce.initialize()
        let state: VideoStreamState
        do {
            state = try VideoStreamState(listingOnly: options.remote, timeoutMs: options.timeoutMs)
        } catch {
            throw .pipeWire(error.description)
        }
        state.options.timeoutMs = options.timeoutMs
        do {
            // Through the portal, WirePlumber grants the cameras to the new connection a moment after
            // it is made (under load, after the first round trip): they are waited for a while.
            let appearWithinMs = if case .descriptor = options.remote { min(options.timeoutMs, 3000) } else { 0 }
            camera = try state.findCamera(options.camera, appearWithinMs: appearWithinMs, timeoutMs: options.timeoutMs)
        } catch {
            state.close()
            throw error
        }
        super.init(state: state)
    }

    /// Connects the stream asking the camera for `mode` (one of `camera.offers`'s, `CameraModeChoice`)
    /// and waits until the camera has agreed to a format.
    public func start(mode: CameraMode) throws(PipeWireScreenError) {
        try state.connectCamera(camera, mode: mode)
    }

    /// The mode the camera agreed to (nil before `start`): what `format`'s pictures are made from.
    public var negotiatedMode: CameraMode? { state.withLock { state.cameraNegotiated } }

    /// How each picture reaches the slot (`--stats`' transfer=): "decode" (MJPEG to BGRx), "convert"
    /// (YUV to BGRx), "copy" (BT.709 NV12 or I420 as they are); "none" before `start`.
    public var transfer: String {
        guard let mode = negotiatedMode else { return "none" }
        if mode.format == .mjpeg { return "decode" }
        return CameraPictureWriter.slotFormat(for: mode) == .bgrx ? "convert" : "copy"
    }
}
