import CPipeWire
import PipeWireCore

#if canImport(Glibc)
import Glibc
#endif

/// What a PipeWire daemon says about itself.
public struct PipeWireServerInfo: Equatable, Sendable {
    /// The daemon's name, as `pipewire-0`.
    public let name: String
    /// The daemon's version, as `0.3.65`.
    public let version: String
    /// The version of the libpipewire this process is linked with.
    public let libraryVersion: String
}

/// Why PipeWire could not be reached. Each case says what to do about it.
public enum PipeWireError: Error, Equatable, CustomStringConvertible {
    case cannotCreate(String)
    case cannotConnect(socket: String, socketExists: Bool)
    case noAnswer(timeoutMs: Int)
    case daemonError(String)

    public var description: String {
        switch self {
        case .cannotCreate(let what):
            return "cannot create the PipeWire \(what)"
        case .cannotConnect(let socket, let socketExists):
            let why = socketExists ? "the socket exists but refused the connection" : "no socket there"
            return "no PipeWire daemon at \(socket) (\(why)); "
                + "start pipewire, or set PIPEWIRE_REMOTE / XDG_RUNTIME_DIR to where it runs"
        case .noAnswer(let timeoutMs):
            return "the PipeWire daemon did not answer within \(timeoutMs) ms"
        case .daemonError(let message):
            return "the PipeWire daemon reported an error: \(message)"
        }
    }
}

/// Connects to the PipeWire daemon once (`PipeWireCore.PipeWireConnection`, as every PipeWire
/// user does), asks it who it is, and disconnects. `livepush doctor` uses it.
public enum PipeWireProbe {
    /// - Parameters:
    ///   - remote: the daemon's socket, a name in the runtime directory (`pipewire-0`) or an
    ///     absolute path; nil for libpipewire's default (`PIPEWIRE_REMOTE`, else `pipewire-0`).
    ///   - timeoutMs: how long to wait for the daemon's answer.
    public static func serverInfo(remote: String? = nil, timeoutMs: Int = 2000) throws(PipeWireError)
        -> PipeWireServerInfo
    {
        do throws(PipeWireConnectionError) {
            let connection = try PipeWireConnection(name: "livepush-probe")
            defer { connection.close() }
            // The core's info event arrives before the answer to the first round trip.
            return try connection.withLock { () throws(PipeWireConnectionError) -> PipeWireServerInfo in
                try connection.connectLocked(remote: .daemon(remote), timeoutMs: timeoutMs)
                guard let name = connection.serverName else { throw .noAnswer(timeoutMs: timeoutMs) }
                return PipeWireServerInfo(name: name, version: connection.serverVersion ?? "",
                                          libraryVersion: String(cString: pw_get_library_version()))
            }
        } catch {
            switch error {
            case .cannotCreate(let what): throw .cannotCreate(what)
            case .noDaemon(let socket, let socketExists): throw .cannotConnect(socket: socket, socketExists: socketExists)
            case .descriptorRefused(let descriptor): throw .cannotConnect(socket: "descriptor \(descriptor)", socketExists: true)
            case .noAnswer(let timeoutMs): throw .noAnswer(timeoutMs: timeoutMs)
            case .daemonError(let message): throw .daemonError(message)
            }
        }
    }

    /// Where libpipewire looks for the daemon, for error messages.
    static func socketPath(remote: String?) -> String { PipeWireConnection.socketPath(remote: remote) }
}


