import AudioCapture
import CommandLineSupport
import Foundation
import LivePush
import Media
import SafeText

/// Everything a command line (or its `--config`) names, checked before anything starts (issue 35): push
/// URLs, the recording's directory, the files read (music, watermarks, pictures, CA file, helper) and
/// the microphone. A problem is an `ArgumentError` (exit 2) that says what is wrong and what to do, with a
/// "did you mean" where a near name exists. No stream key is ever repeated: a URL shows its scheme only.
enum StartChecks {
    static let pushSchemes = ["rtmp", "rtmps", "srt"]

    // MARK: Push URLs

    /// A push URL the pusher could not use: a wrong scheme (`rmtp://`, `http://`) or a malformed one.
    static func pushURL(_ text: String) throws(ArgumentError) {
        let url: String
        do {
            url = try LabelledPushURL(text).url
        } catch {
            throw .invalidArgument(value: "LABEL=...", reason: error.reason)
        }
        do {
            _ = try PushDestination(url)
        } catch {
            let scheme = url.range(of: "://").map { String(url[..<$0.lowerBound]) } ?? ""
            let lower = scheme.lowercased()
            let shown = scheme.isEmpty ? "****" : scheme + "://..."
            if !pushSchemes.contains(lower) {
                throw .invalidArgument(value: shown, reason: schemeAdvice(lower))
            }
            throw .invalidArgument(value: shown, reason: error.reason)
        }
    }

    /// Every destination's URL (`pushURL`), and no label twice: a label is what tells them apart.
    static func pushURLs(_ texts: [String]) throws(ArgumentError) {
        var labels: Set<String> = []
        for text in texts {
            try pushURL(text)
            guard let label = try? LabelledPushURL(text).label else { continue }
            guard labels.insert(label).inserted else {
                throw .invalidArgument(value: label + "=...", reason: "two destinations are labelled '\(label)': "
                    + "give each its own label, as in studio=rtmp://... backup=rtmp://...")
            }
        }
    }

    /// What to write instead of an unknown scheme.
    static func schemeAdvice(_ scheme: String) -> String {
        let forms = "rtmp://host[:port]/app/key, rtmps://host[:port]/app/key or srt://host:port?streamid=..."
        if scheme == "http" || scheme == "https" {
            return "'\(scheme)://' is a web address, not a push URL: push to the RTMP server your service names "
                + "(rtmp://host/app/key, or rtmps:// for \(scheme == "https" ? "TLS" : "RTMP over TLS")); use \(forms)"
        }
        if let near = Suggestion.nearest(to: scheme, in: pushSchemes) {
            return "'\(scheme)' is not a push scheme; did you mean \(near)://? (use \(forms))"
        }
        return "'\(scheme)' is not a push scheme; use \(forms)"
    }

    /// A word that looks like a URL with its slashes wrong (`rtmp:/host/app/key`, `rtmp:host`): its
    /// advice, or nil when it does not look like one.
    static func misspelledURL(_ word: String) -> String? {
        guard let colon = word.firstIndex(of: ":"), !word.contains("://") else { return nil }
        let scheme = word[..<colon].lowercased()
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter }) else { return nil }
        let near = pushSchemes.contains(scheme) ? scheme : Suggestion.nearest(to: scheme, in: pushSchemes)
        guard let near else { return nil }
        return "'\(scheme):...' is not a push URL: a push URL starts with \(near):// (two slashes), as in "
            + "\(near)://host/app/key"
    }

    // MARK: Files

    /// The files a run reads (music, watermarks, the pause and poor-network pictures, the CA file, a
    /// `--helper`) and the microphone.
    static func inputs(config: LivePushConfig, audio: AudioChoice, helper: String?) throws(ArgumentError) {
        let picture = "give a PNG or JPEG file"
        if let path = audio.sound.bgmPath {
            try inputFile(path, option: "bgm", what: "background music",
                          hint: "give an MP3, M4A, FLAC, Ogg, Opus or WAV file")
        }
        for watermark in config.watermarks {
            try inputFile(watermark.path, option: "watermark", what: "watermark", hint: picture)
        }
        if let path = config.pauseImagePath {
            try inputFile(path, option: "pause-image", what: "pause picture", hint: picture)
        }
        if let path = config.networkPoorImagePath {
            try inputFile(path, option: "network-poor-image", what: "poor-network picture", hint: picture)
        }
        if let path = config.caFile {
            try inputFile(path, option: "ca-file", what: "CA certificate", hint: "give a PEM file of CA certificates")
        }
        if let helper, helper.contains("/"), access(helper, X_OK) != 0 {
            try inputFile(helper, option: "helper", what: "helper", hint: "give the path of a capture helper program")
            throw .invalidValue(option: "helper", value: helper, reason: "it is not executable: chmod +x '\(helper)'")
        }
        if audio.microphone, let name = audio.microphoneName { try microphone(name) }
    }

    /// The directory a recording goes into exists and may be written to, and the file is new, or a
    /// regular file to replace with `overwrite`. `option` nil: the command's OUTPUT argument.
    static func recordingPath(_ path: String, option: String?, overwrite: Bool = false) throws(ArgumentError) {
        func refuse(_ reason: String) -> ArgumentError {
            option.map { .invalidValue(option: $0, value: path, reason: reason) }
                ?? .invalidArgument(value: path, reason: reason)
        }
        var existing = stat()
        if lstat(path, &existing) == 0 {
            if let kind = RegularFile.kind(existing.st_mode) {
                throw refuse("it is \(kind), not a file to record into: record to another name")
            }
            if !overwrite { throw refuse("the file exists: give --overwrite to replace it, or record to another name") }
        }
        let directory = (path as NSString).deletingLastPathComponent.isEmpty ? "."
            : (path as NSString).deletingLastPathComponent
        var status = stat()
        guard stat(directory, &status) == 0 else {
            let missing = firstMissing(directory)
            throw refuse("the directory '\(missing)' does not exist: create it (mkdir -p '\(directory)') or record "
                + "elsewhere")
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw refuse("'\(directory)' is not a directory")
        }
        guard access(directory, W_OK | X_OK) == 0 else {
            throw refuse("no permission to write in '\(directory)': record to a directory of yours")
        }
    }

    /// The shortest leading part of `directory` that does not exist.
    private static func firstMissing(_ directory: String) -> String {
        var path = directory.hasPrefix("/") ? "" : "."
        var status = stat()
        for part in directory.split(separator: "/") {
            path = path.isEmpty || path == "/" ? "/" + part : (path == "." && !directory.hasPrefix("./") ? String(part)
                : path + "/" + part)
            if stat(path, &status) != 0 { return path }
        }
        return directory
    }

    /// A file read as input (`what`: "background music", "watermark", ...) is a regular file we may read;
    /// a missing one is named with the nearest file in its directory.
    static func inputFile(_ path: String, option: String, what: String, hint: String) throws(ArgumentError) {
        guard let problem = RegularFile.problem(readingFrom: path) else { return }
        var reason = "the \(what) file \(problem): \(hint)"
        if !FileManager.default.fileExists(atPath: path) {
            let directory = (path as NSString).deletingLastPathComponent
            let name = (path as NSString).lastPathComponent
            let siblings = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
            if let near = Suggestion.nearest(to: name, in: siblings) {
                reason += "; did you mean '\(directory.isEmpty ? near : directory + "/" + near)'?"
            }
        }
        throw .invalidValue(option: option, value: path, reason: reason)
    }

    // MARK: The microphone

    /// `--mic NAME` names a PipeWire source by its node name; a description, or a near name, gets a
    /// "did you mean". Not checked when PipeWire cannot be reached (the run warns and records silence).
    static func microphone(_ name: String) throws(ArgumentError) {
        guard let sources = try? AudioDevices.listSources(), !sources.contains(where: { $0.name == name }) else {
            return
        }
        let inputs = sources.filter { !$0.isMonitor }
        let byDescription = sources.first { $0.description.lowercased() == name.lowercased() }
        let near = byDescription?.name
            ?? Suggestion.nearest(to: name.lowercased(), in: inputs.map { $0.name.lowercased() })
                .flatMap { lower in inputs.first { $0.name.lowercased() == lower }?.name }
        // Node names are any PipeWire client's to choose: shown with their control characters escaped.
        func shown(_ text: String) -> String { UntrustedText.neutralised(text) }
        let names = inputs.map { shown($0.name) }.joined(separator: ", ")
        let because = byDescription.map { "'\(name)' is the description of \(shown($0.name)); --mic takes the node name" }
            ?? "no audio source is named '\(name)'"
        throw .invalidValue(option: "mic", value: name, reason: because + (near.map { "; did you mean \(shown($0))?" } ?? "")
            + " (the sources: \(names.isEmpty ? "none" : names); see 'livepush devices')")
    }
}
