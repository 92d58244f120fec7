import PipeWireCore
// The public, C-free surface of audio capture: what a source is, what capture delivers, and
// what can go wrong. The PipeWire work behind it is in PipeWireGraph.swift and
// PipeWireAudioCapture.swift.

/// One place audio can be captured from: a PipeWire `Audio/Source` node (a microphone), or the
/// monitor of an `Audio/Sink` node (what is being played: desktop audio).
public struct AudioSourceInfo: Sendable, Equatable {
    /// The PipeWire global id of the node (changes when the node is recreated).
    public let id: UInt32
    /// The node's `node.name`: what `--mic NAME` and `AudioCaptureSettings.target` take.
    public let name: String
    /// The node's `node.description`, for people (`Monitor of ...` for a sink monitor).
    public let description: String
    /// The session manager's default source (or, for a monitor, the default sink).
    public let isDefault: Bool
    /// The monitor of a sink rather than a source: it captures what plays on that sink.
    public let isMonitor: Bool

    public init(id: UInt32, name: String, description: String, isDefault: Bool, isMonitor: Bool) {
        self.id = id
        self.name = name
        self.description = description
        self.isDefault = isDefault
        self.isMonitor = isMonitor
    }
}

/// A run of captured audio, exactly `AudioCaptureSettings.chunkMs` long.
public struct PCMChunk: Sendable {
    /// Interleaved 32-bit float samples, nominally -1.0 ... 1.0 (frame k = channel 0, 1, ...).
    public var samples: [Float]
    public var sampleRate: Int
    public var channels: Int
    /// CLOCK_MONOTONIC time of the first sample, in ns (see `PipeWireAudioCapture` for how it is derived).
    public var ptsNs: UInt64
    public var frameCount: Int { samples.count / channels }

    public init(samples: [Float], sampleRate: Int, channels: Int, ptsNs: UInt64) {
        self.samples = samples
        self.sampleRate = sampleRate
        self.channels = channels
        self.ptsNs = ptsNs
    }
}

/// Things that happen to a capture, delivered on PipeWire's thread.
public enum AudioCaptureEvent: Sendable, Equatable {
    /// The first chunk was delivered (once per capture).
    case firstChunk
    /// The named source (node name) disappeared; no chunks until it returns.
    case sourceLost(String)
    /// A node with the lost source's name appeared again and capture resumed from it.
    case sourceReturned(String)
    /// The PipeWire daemon went away (it stopped or restarted): this capture is dead and
    /// delivers nothing more; open a new one once the daemon is back (`message` is its error).
    case daemonLost(String)
}

/// What to capture and in which shape.
public struct AudioCaptureSettings: Sendable {
    /// The `node.name` of a source (or of a sink, to capture its monitor); nil = the default source.
    public var target: String? = nil
    /// The rate to deliver, in Hz; PipeWire resamples. nil = the graph's rate.
    public var sampleRate: Int? = nil
    /// Interleaved channels to deliver; PipeWire up- or down-mixes.
    public var channels: Int = 2
    /// The length of each delivered chunk, in ms.
    public var chunkMs: Int = 20
    /// Desktop audio: capture the monitor of the default sink (or of the sink named by `target`).
    public var captureSinkMonitor = false
    /// The PipeWire daemon's socket: a name in the runtime directory or an absolute path; nil for
    /// libpipewire's default (`PIPEWIRE_REMOTE`, else `$XDG_RUNTIME_DIR/pipewire-0`).
    public var remote: String? = nil

    public init() {}
}

/// Why capture could not start. Each description says what is missing and how to fix it.
public enum AudioCaptureError: Error, CustomStringConvertible, Equatable {
    /// The PipeWire connection failed (PipeWireCore's error, which names the socket and the remedy).
    case pipeWire(PipeWireConnectionError)
    /// No source (or sink, for a monitor) has that node name; `available` lists those that do exist.
    case sourceNotFound(name: String, available: [String])
    /// The capture stream could not be created, connected or negotiated.
    case streamFailed(String)

    public var description: String {
        switch self {
        case .pipeWire(let error):
            switch error {
            case .noDaemon, .descriptorRefused, .noAnswer: return "cannot reach PipeWire: \(error)"
            case .cannotCreate, .daemonError: return "PipeWire audio capture failed: \(error)"
            }
        case .sourceNotFound(let name, let available):
            if available.isEmpty {
                return "no audio source named '\(name)', and PipeWire offers no audio source at all; "
                    + "plug in or enable a microphone, and check that wireplumber is running"
            }
            return "no audio source named '\(name)'; available: \(available.joined(separator: ", ")) "
                + "(see `livepush devices`)"
        case .streamFailed(let why):
            return "PipeWire audio capture failed: \(why)"
        }
    }
}
