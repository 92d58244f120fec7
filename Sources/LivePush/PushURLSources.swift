import Foundation
import Media

/// Push URLs from places where a stream key is out of sight: a file only its owner can read
/// (`--url-file`, config key `urlFile`) and the environment (`LIVEPUSH_URL`). Neither puts the key
/// on a command line, where `ps`, `/proc/PID/cmdline` and shell history show it.
public enum PushURLSources {
    /// The environment variable that may hold push URLs, several separated by spaces.
    public static let environmentVariable = "LIVEPUSH_URL"

    /// The URLs of `LIVEPUSH_URL` in `environment` (the process's by default), none when unset.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> [String]
    {
        (environment[environmentVariable] ?? "").split(whereSeparator: \.isWhitespace).map(String.init)
    }

    /// The URLs in `path`, one a line; blank lines and lines starting with `#` are skipped. The file
    /// is refused when its group or others may read or write it (a key file must be private:
    /// `chmod 600`), when it cannot be read, or when it holds no URL. Errors quote no line of it.
    public static func fromFile(_ path: String) throws(PushURLError) -> [String] {
        // Opened once, without blocking (a FIFO or a device is named, never waited on), and its
        // mode taken from the descriptor that is read.
        let fd: Int32
        do { fd = try RegularFile.openForReading(path) } catch {
            throw PushURLError(reason: "the URL file " + error.description)
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw PushURLError(reason: "the URL file '\(path)' cannot be read") }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw PushURLError(reason: "the URL file '\(path)' is readable by group or others (mode "
                + String(mode, radix: 8) + "); it holds stream keys: make it private with 'chmod 600 \(path)'")
        }
        guard let read = try? handle.readToEnd() else {
            throw PushURLError(reason: "the URL file '\(path)' cannot be read")
        }
        let data = read ?? Data()
        let urls = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        guard !urls.isEmpty else {
            throw PushURLError(reason: "the URL file '\(path)' holds no URL (one push URL a line)")
        }
        for (index, url) in urls.enumerated() where !url.contains("://") {
            throw PushURLError(reason: "line \(index + 1) of the URL file '\(path)' is not a URL (scheme://...); "
                + "its text is not shown, it may be a key")
        }
        return urls
    }
}
