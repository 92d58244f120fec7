import CommandLineSupport
import PipeWireCameras
import PipeWireScreen

/// Where frames come from.
enum CaptureSourceKind: String {
    /// The X server (MIT-SHM), the default.
    case x11
    /// A PipeWire video node named on the command line.
    case pipewire
    /// The xdg-desktop-portal ScreenCast interface: the desktop asks the user what to share.
    case portal
    /// A camera on PipeWire (a V4L2 or libcamera webcam as WirePlumber presents it): CameraRequest.
    case camera
}

/// The options of PipeWire and portal capture, validated.
struct PipeWireRequest {
    var target: PipeWireTarget?
    var portalSourceTypes = PortalSourceTypes.monitor
    var restoresSelection = true
}

/// The options of camera capture (`--source camera`), validated.
struct CameraRequest {
    /// `--camera`: the node's id, node.name, object.path or description; nil for the first camera.
    var camera: String?
    /// `--camera-portal`: ask xdg-desktop-portal's Camera interface for access (a sandboxed app must).
    var viaPortal = false
    /// `--size`, `--fps` and `--camera-format`; the fps is completed from WELCOME when not given.
    var mode = CameraModeRequest()
}

let pipeWireOptions: [OptionSpec] = [
    .value("source", valueName: "x11|pipewire|portal|camera",
           help: "Where frames come from: the X server (default), a PipeWire node, the ScreenCast portal, or a camera."),
    .value("node", valueName: "ID", help: "With --source pipewire: the video node's id (see --list --source pipewire)."),
    .value("target", valueName: "NAME", help: "With --source pipewire: the video node's node.name."),
    .value("portal-source", valueName: "monitor|window|any",
           help: "With --source portal: what the desktop offers to share (default monitor)."),
    .flag("no-restore", help: "With --source portal: ask again instead of reusing the last choice."),
    .value("camera", valueName: "NODE",
           help: "With --source camera: the camera's node.name or id (livepush devices lists them; default: the first)."),
    .value("size", valueName: "WxH",
           help: "With --source camera: the picture size wanted; the camera's nearest mode is taken (default 1280x720)."),
    .value("camera-format", valueName: "yuy2|mjpeg|nv12|i420",
           help: "With --source camera: only modes in this format (default: the cheapest of the nearest modes)."),
    .flag("camera-portal",
          help: "With --source camera: ask the desktop's Camera portal for access (what a sandboxed app must do)."),
]

extension CaptureRequest {
    mutating func parsePipeWireOptions(_ parsed: ParsedArguments) throws(ArgumentError) {
        if let text = parsed.value("source") {
            guard let kind = CaptureSourceKind(rawValue: text) else {
                throw .invalidValue(option: "source", value: text, reason: "use x11, pipewire, portal or camera")
            }
            source = kind
        }
        let pipeWireOnly = ["node", "target"], portalOnly = ["portal-source"]
        if source != .pipewire, let option = pipeWireOnly.first(where: { parsed.value($0) != nil }) {
            throw .invalidValue(option: option, value: parsed.value(option)!,
                                reason: "--\(option) needs --source pipewire")
        }
        if source != .portal, let option = portalOnly.first(where: { parsed.value($0) != nil }) {
            throw .invalidValue(option: option, value: parsed.value(option)!, reason: "--\(option) needs --source portal")
        }
        if source != .x11 {
            let x11Only = ["display", "monitor", "region", "window", "window-name"]
            if let option = x11Only.first(where: { parsed.value($0) != nil }) {
                throw .invalidValue(option: option, value: parsed.value(option)!,
                                    reason: "--\(option) is for X11 capture; it cannot be used with --source \(source.rawValue)")
            }
        }
        if let text = parsed.value("node") {
            guard let id = UInt32(text) else {
                throw .invalidValue(option: "node", value: text, reason: "use a node id such as 42 (pw-cli ls Node)")
            }
            pipeWire.target = .node(id)
        }
        if let name = parsed.value("target") {
            if pipeWire.target != nil {
                throw .invalidValue(option: "target", value: name, reason: "choose one of --node and --target")
            }
            pipeWire.target = .name(name)
        }
        if source == .pipewire && pipeWire.target == nil && !parsed.has("list") {
            throw .missingArgument("--node ID or --target NAME (livepush-capture --list --source pipewire shows them)")
        }
        if let text = parsed.value("portal-source") {
            switch text {
            case "monitor": pipeWire.portalSourceTypes = .monitor
            case "window": pipeWire.portalSourceTypes = .window
            case "any": pipeWire.portalSourceTypes = [.monitor, .window]
            default: throw .invalidValue(option: "portal-source", value: text, reason: "use monitor, window or any")
            }
        }
        pipeWire.restoresSelection = !parsed.has("no-restore")
        try parseCameraOptions(parsed)
    }

    private mutating func parseCameraOptions(_ parsed: ParsedArguments) throws(ArgumentError) {
        let cameraOnly = ["camera", "size", "camera-format"]
        if source != .camera {
            if let option = cameraOnly.first(where: { parsed.value($0) != nil }) {
                throw .invalidValue(option: option, value: parsed.value(option)!, reason: "--\(option) needs --source camera")
            }
            if parsed.has("camera-portal") { throw .invalidValue(option: "camera-portal", value: "",
                                                                 reason: "--camera-portal needs --source camera") }
            return
        }
        if let text = parsed.value("camera") { camera.camera = try CameraOptionValues.camera(text) }
        camera.viaPortal = parsed.has("camera-portal")
        let fps = camera.mode.fps  // --fps, read before
        camera.mode = try CameraOptionValues.modeRequest(size: parsed.value("size"), format: parsed.value("camera-format"))
        camera.mode.fps = fps
    }
}
