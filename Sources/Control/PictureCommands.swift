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

    /// Writes `series.count` pictures, `series.intervalMs` apart on the clock, to `path` (one) or
    /// `FILE-1.png`, `FILE-2.png`, ... (several); the answer's extra fields list them. A picture
    /// that fails ends the series, and the answer says which files were written.
    static func snapshots(path: String, series: ControlSnapshotSeries, pusher: LivePusher, verb: String)
        -> Result<[String: Any], ControlError>
    {
        guard series.count > 1 else { return snapshot(path: path, pusher: pusher, verb: verb) }
        let startNs = DispatchTime.now().uptimeNanoseconds
        var written: [String] = []
        for index in 1...series.count {
            let dueNs = startNs + UInt64(index - 1) * UInt64(series.intervalMs) * 1_000_000
            let nowNs = DispatchTime.now().uptimeNanoseconds
            if dueNs > nowNs { usleep(useconds_t((dueNs - nowNs) / 1000)) }
            let file = series.path(path, index: index)
            if case .failure(let error) = snapshot(path: file, pusher: pusher, verb: verb) {
                guard !written.isEmpty else { return .failure(error) }
                return .failure(.refused(command: verb, reason: "\(error.description) (after \(written.count) pictures: "
                    + written.joined(separator: ", ") + ")"))
            }
            written.append(file)
        }
        return .success(["snapshots": written])
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
