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

/// Connects to the PipeWire daemon once (`PipeWireCore.PipeWireConnection`, as every PipeWire
/// user does), asks it who it is, and disconnects. `livepush doctor` uses it.
public enum PipeWireProbe {
    /// - Parameters:
    ///   - remote: the daemon's socket, a name in the runtime directory (`pipewire-0`) or an
    ///     absolute path; nil for libpipewire's default (`PIPEWIRE_REMOTE`, else `pipewire-0`).
    ///   - timeoutMs: how long to wait for the daemon's answer.
    public static func serverInfo(remote: String? = nil, timeoutMs: Int = 2000) throws(PipeWireConnectionError)
        -> PipeWireServerInfo
    {
        let connection = try PipeWireConnection(name: "livepush-probe")
        defer { connection.close() }
        // The core's info event arrives before the answer to the first round trip.
        return try connection.withLock { () throws(PipeWireConnectionError) -> PipeWireServerInfo in
            try connection.connectLocked(remote: .daemon(remote), timeoutMs: timeoutMs)
            guard let name = connection.serverName else { throw .noAnswer(timeoutMs: timeoutMs) }
            return PipeWireServerInfo(name: name, version: connection.serverVersion ?? "",
                                      libraryVersion: String(cString: pw_get_library_version()))
        }
    }

    /// Where libpipewire looks for the daemon, for error messages.
    static func socketPath(remote: String?) -> String { PipeWireConnection.socketPath(remote: remote) }
}


