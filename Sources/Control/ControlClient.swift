import Foundation
import Glibc

/// The client end of a control socket (`livepush ctl`): one request line, one answer line; for
/// `events`, the answer and then event lines until either side hangs up.
public final class ControlClient {
    public let name: String
    public let path: String
    private let fd: Int32
    private let reader: LineReader

    /// Connects to broadcast `name`, or, when nil, to the only one running (several: an error
    /// listing them; none: an error saying how to start one).
    public init(name: String?, runtimeDirectory: String? = nil) throws(ControlError) {
        let chosen: String
        if let name {
            chosen = name
        } else {
            let names = ControlSocket.runningNames(runtimeDirectory: runtimeDirectory)
            guard let only = names.first else {
                throw .noBroadcast(directory: ControlSocket.directory(runtimeDirectory: runtimeDirectory))
            }
            guard names.count == 1 else { throw .severalBroadcasts(names) }
            chosen = only
        }
        self.name = chosen
        path = try ControlSocket.path(name: chosen, runtimeDirectory: runtimeDirectory)
        fd = try ControlSocket.connect(path: path)
        reader = LineReader(fd: fd, maxBytes: 16 * 1024 * 1024)
    }

    /// Connects to the control socket at `path` (`livepush ctl --socket PATH`: a caller without the
    /// broadcast's environment, such as nginx-rtmp's `exec_play`, which clears XDG_RUNTIME_DIR).
    public init(path: String) throws(ControlError) {
        name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        self.path = path
        fd = try ControlSocket.connect(path: path)
        reader = LineReader(fd: fd, maxBytes: 16 * 1024 * 1024)
    }

    deinit { close(fd) }

    /// Sends `command` with `args` and returns the answer line.
    public func send(command: String, args: [String]) throws(ControlError) -> String {
        let request = JSONLine.encode(["command": command, "args": args])
        guard ControlSocket.writeLine(fd, request) else { throw .cannotConnect(path: path, reason: "the broadcast hung up") }
        return try nextLine()
    }

    /// The next line from the broadcast (event lines after `events`).
    public func nextLine() throws(ControlError) -> String {
        do {
            return try reader.next()
        } catch {
            throw .cannotConnect(path: path, reason: "the broadcast closed the connection")
        }
    }
}
