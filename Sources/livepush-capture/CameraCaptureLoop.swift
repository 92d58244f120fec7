import CaptureLink
import CommandLineSupport
import LinuxSystem
import PipeWireCameras
import PipeWireScreen

/// `--source camera`: a camera on PipeWire, through `PipeWireCaptureLoop`'s sessions with a
/// `CameraSessionSource`.
enum CameraCaptureLoop {
    /// `--list --source camera`: the cameras and what each offers.
    static func list() -> Terminal.ExitCode {
        do {
            let cameras = try CameraDevices.list()
            print("Cameras (--camera NAME or ID):")
            if cameras.isEmpty { print("  (none)") }
            for camera in cameras {
                print("  \(camera)" + (camera.objectPath.isEmpty ? "" : "  \(camera.objectPath)"))
                for line in camera.formatLines { print("      \(line)") }
            }
            return .success
        } catch {
            return CaptureLoop.fail(error.description)
        }
    }

    static func run(_ request: CaptureRequest) -> Terminal.ExitCode {
        let source: CameraSessionSource
        do {
            source = try CameraSessionSource(request.camera)
        } catch {
            switch error {
            case .interrupted(let text):
                CaptureLoop.note(text)
                return .success
            case .configuration(let text): return CaptureLoop.failConfiguration(text)
            case .failure(let text): return CaptureLoop.fail(text)
            }
        }
        defer { source.close() }
        return PipeWireCaptureLoop.runSessions(request, source: source)
    }
}

/// Why the camera could not be opened: the helper's exit status follows.
enum CameraOpenError: Error {
    /// A wrong configuration (no such camera, no mode it can take, no PipeWire): exit 78.
    case configuration(String)
    /// A failure that may pass (the portal refused, a stream that did not start): exit 1.
    case failure(String)
    /// Stopped while the portal's dialog was open: exit 0.
    case interrupted(String)
}

/// A camera as a session's source. Its mode is chosen by size first (`CameraModeChoice`), before
/// HELLO (which announces that size); the rate follows WELCOME's unless `--fps` was given, and the
/// stream starts then. When the camera goes away (unplugged, its program gone, PipeWire restarted)
/// the session is not ended: the helper sends PAUSE (the pusher shows its pause picture), tries to
/// open the camera again every 500 ms while answering the pusher, and sends RESUME once it is back.
final class CameraSessionSource: PipeWireSessionSource {
    private let request: CameraRequest
    private var camera: PipeWireCameraStream
    private var mode: CameraMode
    private var started = false
    private var portalGranted = false
    private(set) var helloSize: (width: Int, height: Int)

    init(_ request: CameraRequest) throws(CameraOpenError) {
        self.request = request
        var portalGranted = false
        camera = try Self.open(request, portalGranted: &portalGranted)
        self.portalGranted = portalGranted
        mode = try Self.choose(camera.camera, request.mode)
        helloSize = (mode.width, mode.height)
    }

    func close() { camera.close() }

    var stream: PipeWireVideoStream { camera }
    var capabilities: Capabilities { [] }
    var transfer: String { camera.transfer }

    var sourceInfo: String {
        "{\"source\":\"camera\",\"node\":\(camera.camera.id),\"camera\":\(PipeWireCaptureLoop.jsonString(camera.camera.name)),"
            + (request.viaPortal ? "\"portal\":true," : "") + "\"mode\":\(PipeWireCaptureLoop.jsonString(mode.description))}"
    }

    /// Connects to PipeWire (or to what the Camera portal grants) and finds the camera.
    private static func open(_ request: CameraRequest, portalGranted: inout Bool) throws(CameraOpenError)
        -> PipeWireCameraStream
    {
        var options = PipeWireCameraOptions()
        options.camera = request.camera
        if request.viaPortal {
            do {
                options.remote = .descriptor(try CameraPortal.openRemote(asksAccess: !portalGranted) {
                    stopRequested.load(ordering: .relaxed)
                })
                portalGranted = true
            } catch .interrupted(let method) {
                throw .interrupted(CameraPortalError.interrupted(method: method).description)
            } catch {
                throw .failure(error.description)
            }
        }
        do {
            return try PipeWireCameraStream(options: options)
        } catch {
            throw .configuration(error.description)
        }
    }

    private static func choose(_ camera: CameraInfo, _ wanted: CameraModeRequest) throws(CameraOpenError) -> CameraMode {
        guard let mode = CameraModeChoice.choose(camera.offers, wanted) else {
            throw .configuration(CameraError.noUsableMode(camera: camera.description,
                                                          offered: NodeFormatQuery.names(camera.offers),
                                                          wantedFormat: wanted.format).description)
        }
        return mode
    }

    /// The mode for the pusher's rate (`--fps` wins), started.
    func sessionStarting(fps: Int) -> SourceEnd? {
        guard !started else { return nil }
        var wanted = request.mode
        if wanted.fps == nil { wanted.fps = Double(fps) }
        do {
            try start(wanted)
        } catch {
            switch error {
            case .configuration(let text): return .finish(.error, text, .configuration)
            case .failure(let text), .interrupted(let text): return .finish(.error, text, .failure)
            }
        }
        return nil
    }

    private func start(_ wanted: CameraModeRequest) throws(CameraOpenError) {
        let chosen = try Self.choose(camera.camera, wanted)
        do {
            try camera.start(mode: chosen)
        } catch {
            throw .configuration(error.description)
        }
        mode = camera.negotiatedMode ?? chosen
        started = true
        CaptureLoop.note(CameraModeChoice.describe(chosen, wanted))
        let how = ["decode": "decoded into", "convert": "converted into", "copy": "copied as"][transfer] ?? transfer
        CaptureLoop.note("capturing camera \(camera.camera): \(mode), \(how) \(camera.format.format.rawValue)")
    }

    /// A camera at or under the pusher's rate sets the pace: each picture goes at once (holding one
    /// back for the pusher's interval only adds latency, and jitter would make it wait often).
    func pacesTo(fps: Int) -> Bool { mode.frameRate.fps > Double(fps) * 1.05 }

    func pusherLimits(maxWidth: Int, maxHeight: Int) {
        CaptureLoop.warn("the pusher takes at most \(maxWidth)x\(maxHeight); the camera's \(mode.width)x\(mode.height) "
            + "pictures are cropped to it (choose a smaller --size)")
    }

    func configure(maxWidth: Int, maxHeight: Int) {}  // the camera keeps its mode; the pusher scales

    func sourceEnded(_ event: ScreenStreamEvent, endpoint: HelperEndpoint, fps: inout Int,
                     sessionSize: (width: Int, height: Int)) throws(HelperLinkError) -> SourceEnd
    {
        let why: String
        switch event {
        case .sourceClosed(let text), .sourceLost(let text): why = text
        default: why = "\(event)"
        }
        let name = camera.camera.description
        CaptureLoop.note("the camera \(name) went away (\(why)); the pusher shows its pause picture until it is back")
        try endpoint.pause(.sourceHidden)
        camera.close()
        started = false
        var nextTryNs: UInt64 = 0
        while true {
            if stopRequested.load(ordering: .relaxed) {
                return .finish(.user, "livepush-capture was interrupted", .success)
            }
            for pusherRequest in try endpoint.poll(timeoutMs: 100) {
                switch pusherRequest {
                case .config(let config): fps = Int(min(240, max(1, config.fps)))
                case .stop(_, let text): return .finish(.user, "stopped by the pusher (\(text))", .success)
                }
            }
            guard MonotonicClock.nowNs() >= nextTryNs else { continue }
            nextTryNs = MonotonicClock.nowNs() + 500_000_000
            var wanted = request.mode
            if wanted.fps == nil { wanted.fps = Double(fps) }
            do {
                let reopened = try Self.open(request, portalGranted: &portalGranted)
                camera = reopened
                let chosen = try Self.choose(reopened.camera, wanted)
                if chosen.width > sessionSize.width || chosen.height > sessionSize.height {
                    // Larger than this session's ring: a new session announces the new size.
                    mode = chosen
                    helloSize = (chosen.width, chosen.height)
                    return .restart("the camera came back with \(chosen.width)x\(chosen.height) pictures")
                }
                try start(wanted)
            } catch {
                camera.close()
                continue  // not back yet
            }
            try endpoint.resume()
            CaptureLoop.note("the camera \(camera.camera.description) is back")
            return .resumed
        }
    }
}
