import Foundation
import LivePush
import Media

/// What `record` does (issue 34): start a recording to a file while the broadcast goes on, stop it,
/// pause it or resume it.
public enum ControlRecordAction: Equatable, Sendable {
    case start(path: String)
    case stop
    case pause
    case resume

    static let usage = "use: record start FILE | stop | pause | resume"

    /// The words after `record`.
    static func parse(_ args: [String]) throws(ControlError) -> ControlRecordAction {
        guard let action = args.first else { throw .missingValue(command: "record", expected: "start FILE, stop, pause or resume") }
        let rest = Array(args.dropFirst())
        switch action {
        case "start":
            guard let path = rest.first else { throw .missingValue(command: "record", expected: "start FILE") }
            guard rest.count == 1 else { throw .invalidValue(command: "record", value: rest[1], reason: usage) }
            guard RecordingContainer(path: path) != nil else {
                throw .invalidValue(command: "record", value: path, reason: "the file name must end in .mkv, .mp4 or .flv")
            }
            return .start(path: path)
        case "stop", "pause", "resume":
            guard rest.isEmpty else { throw .invalidValue(command: "record", value: rest[0], reason: "'record \(action)' takes no value") }
            return action == "stop" ? .stop : action == "pause" ? .pause : .resume
        default:
            throw .invalidValue(command: "record", value: action, reason: usage)
        }
    }

    /// The words after `record`, as typed.
    var arguments: [String] {
        switch self {
        case .start(let path): ["start", path]
        case .stop: ["stop"]
        case .pause: ["pause"]
        case .resume: ["resume"]
        }
    }
}

/// Carries out `record` on a pusher; the answer's extra fields.
enum RecordCommands {
    static func execute(_ action: ControlRecordAction, pusher: LivePusher, verb: String) -> Result<[String: Any], ControlError> {
        switch action {
        case .start(let path):
            // Nothing that exists is opened (a FIFO or a device is "exists", issue 30): the file is new.
            let code = pusher.startLocalRecording(path: path)
            guard code == LocalRecordingCode.ok else {
                return .failure(.refused(command: verb, reason: describe(startCode: code, path: path)))
            }
            return .success(["recording": path])
        case .stop:
            guard let path = pusher.status.recordingPath else { return .failure(.refused(command: verb, reason: "nothing is being recorded")) }
            pusher.stopLocalRecording()
            return .success(["recorded": path])
        case .pause, .resume:
            let status = pusher.status
            guard status.recordingPath != nil else { return .failure(.refused(command: verb, reason: "nothing is being recorded")) }
            let pausing = action == .pause
            guard status.recordingPaused != pausing else {
                return .failure(.refused(command: verb, reason: pausing ? "the recording is already paused" : "the recording is not paused"))
            }
            let code = pausing ? pusher.pauseLocalRecording() : pusher.resumeLocalRecording()
            guard code == LocalRecordingCode.ok else {
                return .failure(.refused(command: verb, reason: "the recording ended meanwhile"))
            }
            return .success([:])
        }
    }

    /// The reference SDK's codes of `startLocalRecording`, in words.
    static func describe(startCode code: Int32, path: String) -> String {
        switch code {
        case LocalRecordingCode.alreadyRecording: "already recording (stop it first: 'record stop')"
        case LocalRecordingCode.fileExists: "'\(path)' exists; choose another name"
        case LocalRecordingCode.noPermission: "cannot create '\(path)': its directory is missing or not writable"
        case LocalRecordingCode.unsupportedExtension: "the file name must end in .mkv, .mp4 or .flv"
        default: "the broadcast has no video to record yet (\(code))"
        }
    }
}
