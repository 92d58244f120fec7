import CommandLineSupport
import PipeWireCameras

/// The camera's options of `livepush screen` and `push` (passed on to livepush-capture), checked before
/// anything starts: their combination and values (`check`), then the camera itself against PipeWire
/// (`checkCamera`): a camera that is not there, or offers nothing in the format asked for, is named with
/// the cameras there are (and the nearest name) instead of being found missing by the helper later.
enum CameraOptions {
    /// The camera's options make sense with `--source camera` only, and a camera is the whole picture
    /// for now; `--camera`, `--size` and `--camera-format` take what the helper takes.
    static func check(_ parsed: ParsedArguments, file: BroadcastSettings) throws(ArgumentError) {
        func value(_ name: String) -> String? { parsed.value(name) ?? file.captureValues[name] }
        let isCamera = value("source") == "camera"
        if !isCamera {
            if let option = ["camera", "size", "camera-format"].first(where: { value($0) != nil }) {
                throw .invalidValue(option: option, value: value(option)!, reason: "--\(option) needs --source camera")
            }
            if parsed.has("camera-portal") || file.captureFlags.contains("camera-portal") {
                throw .invalidValue(option: "camera-portal", value: "", reason: "--camera-portal needs --source camera")
            }
            return
        }
        if let camera = value("camera") {
            if camera.contains("@") {
                throw .invalidValue(option: "camera", value: camera, reason: "a camera in a rectangle of the picture "
                    + "(NODE@X,Y,W) comes with scenes; today the camera is the whole picture: --source camera --camera NODE")
            }
            _ = try CameraOptionValues.camera(camera)
        }
        _ = try CameraOptionValues.modeRequest(size: value("size"), format: value("camera-format"))
    }

    /// With `--source camera` and livepush-capture started by this run (not a helper on `--group` or a
    /// `--helper` of the user's own), the camera asked for (or the first) and a mode in the format asked
    /// for: what is wrong, or nil. Through `--camera-portal` the helper sees what the portal grants, not
    /// what this process sees, and a PipeWire this process cannot reach is the helper's to report (it
    /// says why and stops the run at once): neither is checked here.
    static func cameraProblem(_ parsed: ParsedArguments, file: BroadcastSettings) -> String? {
        func value(_ name: String) -> String? { parsed.value(name) ?? file.captureValues[name] }
        guard value("source") == "camera", parsed.value("group") == nil, parsed.value("helper") == nil,
              !parsed.has("camera-portal"), !file.captureFlags.contains("camera-portal"),
              let request = try? CameraOptionValues.modeRequest(size: nil, format: value("camera-format"))
        else { return nil }
        do {
            _ = try CameraDevices.resolve(value("camera"), format: request.format)
            return nil
        } catch .pipeWire {
            return nil
        } catch {
            return error.description
        }
    }
}
