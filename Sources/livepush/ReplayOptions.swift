import CommandLineSupport
import Foundation
import LivePush

/// `--replay-buffer SECONDS` and `--replay-dir DIR` (issue 34): keep the last seconds of the stream
/// in memory for `livepush ctl replay save`.
struct ReplayChoice: Equatable {
    var seconds: Int
    /// Where `replay save` with no FILE writes; nil: `$XDG_VIDEOS_DIR`, else the current directory.
    var directory: String?

    static let specs: [OptionSpec] = [
        .value("replay-buffer", valueName: "SECONDS",
               help: "Keep the last SECONDS (1 to 600) of the stream in memory; 'livepush ctl replay save [FILE]' (or the "
                   + "dashboard's Save replay) writes them to a file, from a keyframe, while the broadcast goes on."),
        .value("replay-dir", valueName: "DIR",
               help: "Where 'replay save' with no FILE writes replay-YYYYMMDD-HHMMSS.mkv (default: $XDG_VIDEOS_DIR, "
                   + "else the current directory)."),
    ]

    /// The choice the options make (nil without --replay-buffer), checked before anything starts;
    /// the directory too unless `checkingDirectory` is false (the values alone, for --print-config).
    static func parse(_ parsed: ParsedArguments, checkingDirectory: Bool = true) throws(ArgumentError) -> ReplayChoice? {
        guard let text = parsed.value("replay-buffer") else {
            if let directory = parsed.value("replay-dir") {
                throw .invalidValue(option: "replay-dir", value: directory,
                                    reason: "it is where the replay buffer is saved; give --replay-buffer SECONDS as well")
            }
            return nil
        }
        let range = LivePusher.replaySecondsRange
        guard let seconds = Int(text), range.contains(seconds) else {
            throw .invalidValue(option: "replay-buffer", value: text,
                                reason: "give whole seconds, \(range.lowerBound) to \(range.upperBound)")
        }
        guard let directory = parsed.value("replay-dir") else { return ReplayChoice(seconds: seconds) }
        guard checkingDirectory else { return ReplayChoice(seconds: seconds, directory: directory) }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .invalidValue(option: "replay-dir", value: directory, reason: "no such directory; create it first")
        }
        guard FileManager.default.isWritableFile(atPath: directory) else {
            throw .invalidValue(option: "replay-dir", value: directory, reason: "the directory is not writable")
        }
        // Absolute: `replay save` runs later, and the name it reports should be usable from anywhere.
        let absolute = directory.hasPrefix("/") ? directory
            : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(directory)
        return ReplayChoice(seconds: seconds, directory: (absolute as NSString).standardizingPath)
    }
}
