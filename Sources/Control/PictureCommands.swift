import Foundation
import LivePush
import Media

/// The picture's control commands (issue 16): `watermark add|remove`, `snapshot FILE`.
enum PictureCommands {
    /// Adds or removes a watermark; the answer's extra fields (`watermarkId` for add).
    static func watermark(_ action: ControlWatermarkAction, pusher: LivePusher, verb: String)
        -> Result<[String: Any], ControlError>
    {
        switch action {
        case .add(let file):
            if let problem = RegularFile.problem(readingFrom: file.path) {
                return .failure(.refused(command: verb, reason: problem))
            }
            let position = file.position
            let id = pusher.addWatermark(path: file.path, x: position.x, y: position.y, width: position.width,
                                         opacity: position.opacity)
            guard id > 0 else {
                return .failure(.refused(command: verb, reason: id == LivePushErrorCode.watermarkUnreadable
                    ? "cannot read '\(file.path)' as a PNG or JPEG file" : "the watermark does not fit the picture"))
            }
            return .success(["watermarkId": Int(id)])
        case .remove(let id):
            guard pusher.removeWatermark(id: Int32(id)) == 0 else {
                let ids = pusher.watermarks.map { String($0.id) }
                return .failure(.invalidValue(command: verb, value: String(id), reason: ids.isEmpty
                    ? "there is no watermark" : "the watermarks' ids are \(ids.joined(separator: ", "))"))
            }
            return .success([:])
        }
    }

    /// Writes the next outgoing picture to `path` as a PNG; the answer's extra fields.
    static func snapshot(path: String, pusher: LivePusher, verb: String) -> Result<[String: Any], ControlError> {
        switch pusher.snapshotPNG() {
        case .success(let png):
            // Mode 0600, and never opening what is at the path: a FIFO or a device is refused (issue 30).
            do {
                try RegularFile.write(png, to: path)
            } catch {
                return .failure(.refused(command: verb, reason: error.description))
            }
            return .success(["snapshot": path, "bytes": png.count])
        case .failure(let error):
            return .failure(.refused(command: verb, reason: error.description))
        }
    }
}
