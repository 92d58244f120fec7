import Foundation
import LivePush
import Media

/// What `record` does (issue 34): start a recording to a file while the broadcast goes on, stop it,
/// pause it, resume it, or go on in a new file (split).
public enum ControlRecordAction: Equatable, Sendable {
    /// With `split`, in numbered files (`talk-001.mkv`...) of that duration or size.
    case start(path: String, split: RecordingSplit?)
    case stop
    case pause
    case resume
    case split

    static let usage = "use: record start FILE [--split DURATION|SIZE] | stop | pause | resume | split"

    /// The words after `record`.
    static func parse(_ args: [String]) throws(ControlError) -> ControlRecordAction {
        guard let action = args.first else {
            throw .missingValue(command: "record", expected: "start FILE, stop, pause, resume or split")
        }
        let rest = Array(args.dropFirst())
        switch action {
        case "start":
            guard let path = rest.first else { throw .missingValue(command: "record", expected: "start FILE") }
            guard RecordingContainer(path: path) != nil else {
                throw .invalidValue(command: "record", value: path, reason: "the file name must end in .mkv, .mp4 or .flv")
            }
            var split: RecordingSplit?
            if rest.count > 1 {
                guard rest[1] == "--split" else { throw .invalidValue(command: "record", value: rest[1], reason: usage) }
                guard rest.count > 2 else { throw .missingValue(command: "record", expected: "--split DURATION|SIZE") }
                guard rest.count == 3 else { throw .invalidValue(command: "record", value: rest[3], reason: usage) }
                do throws(RecordingSplitError) {
                    split = try RecordingSplit(parsing: rest[2])
                } catch {
                    throw .invalidValue(command: "record", value: rest[2], reason: error.reason)
                }
            }
            return .start(path: path, split: split)
        case "stop", "pause", "resume", "split":
            guard rest.isEmpty else { throw .invalidValue(command: "record", value: rest[0], reason: "'record \(action)' takes no value") }
            return action == "stop" ? .stop : action == "pause" ? .pause : action == "resume" ? .resume : .split
        default:
            throw .invalidValue(command: "record", value: action, reason: usage)
        }
    }

    /// The words after `record`, as typed.
    var arguments: [String] {
        switch self {
        case .start(let path, let split): ["start", path] + (split.map { ["--split", $0.description] } ?? [])
        case .stop: ["stop"]
        case .split: ["split"]
        case .pause: ["pause"]
        case .resume: ["resume"]
        }
    }
}

/// Carries out `record` on a pusher; the answer's extra fields.
enum RecordCommands {
    static func execute(_ action: ControlRecordAction, pusher: LivePusher, verb: String) -> Result<[String: Any], ControlError> {
        switch action {
        case .start(let path, let split):
            // Nothing that exists is opened (a FIFO or a device is "exists", issue 30): the file is new.
            let code = pusher.startLocalRecording(path: path, split: split)
            let filePath = split == nil ? path : RecordingSplit.numberedPath(path, number: 1)
            guard code == LocalRecordingCode.ok else {
                return .failure(.refused(command: verb, reason: describe(startCode: code, path: filePath)))
            }
            return .success(["recording": filePath])
        case .split:
            guard let path = pusher.status.recordingPath else { return .failure(.refused(command: verb, reason: "nothing is being recorded")) }
            guard pusher.splitLocalRecording() == LocalRecordingCode.ok else {
                return .failure(.refused(command: verb, reason: "nothing has been recorded yet (the file waits for its first picture)"))
            }
            // The next file starts at the next keyframe: `recordSplit` names it.
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
