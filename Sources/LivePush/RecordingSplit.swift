import Foundation

/// When a recording goes on in a new file (`--record-split`, issue 34): after a duration or a
/// size, at the next keyframe. The files are numbered (`RecordingSplit.numberedPath`).
public enum RecordingSplit: Equatable, Sendable, CustomStringConvertible {
    /// After this much recorded time (video time, pauses left out).
    case durationMs(Int)
    /// Once the file holds this many bytes.
    case sizeBytes(Int64)

    /// The least a split may be: shorter files are a mistake (a forgotten unit), not a wish.
    public static let minimumDurationMs = 1000
    public static let minimumSizeBytes: Int64 = 1_000_000

    /// `10s`, `30m`, `2h` (also `90sec`, `5min`) or `500MB`, `2GB`, `1500kB` (decimal: 1 MB = 10^6 bytes);
    /// any case. Throws the reason a value is refused (no unit, zero, below 1 s or 1 MB).
    public init(parsing text: String) throws(RecordingSplitError) {
        let lowered = text.lowercased().trimmingCharacters(in: .whitespaces)
        let durations: [(String, Int64)] = [("sec", 1000), ("s", 1000), ("min", 60_000), ("m", 60_000), ("h", 3_600_000)]
        let sizes: [(String, Int64)] = [("kb", 1000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("tb", 1_000_000_000_000)]
        func number(_ unit: String, _ scale: Int64) throws(RecordingSplitError) -> Int64 {
            let digits = lowered.dropLast(unit.count).trimmingCharacters(in: .whitespaces)
            guard let value = Double(digits), value.isFinite, value > 0, value * Double(scale) < 9e15 else {
                throw RecordingSplitError(text: text, reason: "expected a number above 0 before '\(unit)'")
            }
            return Int64(value * Double(scale))
        }
        if let (unit, scale) = sizes.first(where: { lowered.hasSuffix($0.0) }) {
            let bytes = try number(unit, scale)
            guard bytes >= Self.minimumSizeBytes else { throw RecordingSplitError(text: text, reason: "a file must hold at least 1MB") }
            self = .sizeBytes(bytes)
        } else if let (unit, scale) = durations.first(where: { lowered.hasSuffix($0.0) && !lowered.hasSuffix("ms") }) {
            let ms = try number(unit, scale)
            guard ms >= Int64(Self.minimumDurationMs) else { throw RecordingSplitError(text: text, reason: "a file must last at least 1s") }
            self = .durationMs(Int(ms))
        } else {
            throw RecordingSplitError(text: text, reason: "expected a duration (10s, 30m, 2h) or a size (500MB, 2GB) with its unit")
        }
    }

    /// As typed: `10s`, `30m`, `2GB`.
    public var description: String {
        switch self {
        case .durationMs(let ms):
            ms % 3_600_000 == 0 ? "\(ms / 3_600_000)h" : ms % 60_000 == 0 ? "\(ms / 60_000)m"
                : ms % 1000 == 0 ? "\(ms / 1000)s" : String(format: "%.3gs", Double(ms) / 1000)
        case .sizeBytes(let bytes):
            bytes % 1_000_000_000 == 0 ? "\(bytes / 1_000_000_000)GB" : bytes % 1_000_000 == 0 ? "\(bytes / 1_000_000)MB"
                : "\(bytes / 1000)kB"
        }
    }

    /// The name of a split recording's `number`th file (from 1): `talk.mkv` → `talk-001.mkv`,
    /// `talk-002.mkv`... (three digits or more, so that they sort in order, as OBS's automatic
    /// file splitting numbers its files). A recording started with a split has every file
    /// numbered; one split on command only (`splitLocalRecording()`) keeps the first file's name
    /// and numbers the next ones from 2.
    public static func numberedPath(_ path: String, number: Int) -> String {
        let name = path as NSString
        let stem = name.deletingPathExtension
        let suffix = name.pathExtension.isEmpty ? "" : "." + name.pathExtension
        return stem + String(format: "-%03d", number) + suffix
    }
}

/// A `--record-split` value refused, and why.
public struct RecordingSplitError: Error, Equatable, Sendable {
    public let text: String
    public let reason: String
}
