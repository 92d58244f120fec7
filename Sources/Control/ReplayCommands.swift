import Foundation
import LivePush
import Media

/// What `replay` does (issue 34): write the replay buffer to a file while the broadcast goes on.
public enum ControlReplayAction: Equatable, Sendable {
    /// To `path`, or (nil) to `replay-YYYYMMDD-HHMMSS.mkv` in the broadcast's replay directory.
    case save(path: String?)

    static let usage = "use: replay save [FILE]"

    /// The words after `replay`.
    static func parse(_ args: [String]) throws(ControlError) -> ControlReplayAction {
        guard let action = args.first else { throw .missingValue(command: "replay", expected: "save [FILE]") }
        guard action == "save" else { throw .invalidValue(command: "replay", value: action, reason: usage) }
        let rest = Array(args.dropFirst())
        guard rest.count <= 1 else { throw .invalidValue(command: "replay", value: rest[1], reason: usage) }
        guard let path = rest.first else { return .save(path: nil) }
        guard RecordingContainer(path: path) != nil else {
            throw .invalidValue(command: "replay", value: path, reason: "the file name must end in .mkv, .mp4 or .flv")
        }
        return .save(path: path)
    }

    /// The words after `replay`, as typed.
    var arguments: [String] {
        switch self {
        case .save(let path): ["save"] + (path.map { [$0] } ?? [])
        }
    }
}

/// Carries out `replay` on a pusher; the answer's extra fields.
enum ReplayCommands {
    static func execute(_ action: ControlReplayAction, pusher: LivePusher, verb: String) -> Result<[String: Any], ControlError> {
        switch action {
        case .save(let path):
            let (code, file) = pusher.saveReplayNamed(path: path)
            guard code == ReplayCode.ok else { return .failure(.refused(command: verb, reason: describe(code: code, path: file))) }
            // The file is complete when the replaySaved event says so (it is written on a thread of its own).
            return .success(["replaySaving": file])
        }
    }

    /// `saveReplay`'s codes, in words.
    static func describe(code: Int32, path: String) -> String {
        switch code {
        case ReplayCode.notEnabled: "no replay buffer: start the broadcast with --replay-buffer SECONDS"
        case ReplayCode.nothingBuffered: "the replay buffer holds no keyframe yet; try again in a moment"
        case ReplayCode.tooManySaves: "4 saves are waiting to be written already; try again when one is done"
        case ReplayCode.fileExists: "'\(path)' exists; choose another name"
        case ReplayCode.noPermission: "cannot create '\(path)': its directory is missing or not writable"
        case ReplayCode.unsupportedExtension: "the file name must end in .mkv, .mp4 or .flv"
        default: "the broadcast has no video yet (\(code))"
        }
    }
}
