import CommandLineSupport

/// The values of the camera's options as livepush-capture and `livepush screen` both read them, so that
/// the pusher refuses before anything starts exactly what its helper would refuse.
public enum CameraOptionValues {
    /// `--camera NODE`: a node's id, node.name, object.path or description; never empty.
    public static func camera(_ text: String) throws(ArgumentError) -> String {
        guard !text.isEmpty, !text.contains("@") else {
            throw .invalidValue(option: "camera", value: text,
                                reason: "use the camera's node.name or id, as livepush devices lists them")
        }
        return text
    }

    /// `--size WxH` and `--camera-format yuy2|mjpeg|nv12|i420` as a mode request (the rate is left open).
    public static func modeRequest(size: String?, format: String?) throws(ArgumentError) -> CameraModeRequest {
        var request = CameraModeRequest()
        if let size {
            let parts = size.lowercased().split(separator: "x").map { Int($0) }
            guard parts.count == 2, let width = parts[0], let height = parts[1], (1...16384).contains(width),
                  (1...16384).contains(height)
            else {
                throw .invalidValue(option: "size", value: size, reason: "use WxH with W and H from 1 to 16384, e.g. 1280x720")
            }
            request.width = width
            request.height = height
        }
        if let format {
            guard let cameraFormat = CameraFormat.allCases.first(where: { $0.optionName == format.lowercased() }) else {
                throw .invalidValue(option: "camera-format", value: format, reason: "use yuy2, mjpeg, nv12 or i420")
            }
            request.format = cameraFormat
        }
        return request
    }
}
