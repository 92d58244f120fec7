import PipeWireCore

/// The public vocabulary of PipeWire screen capture: formats, targets, frames and errors.
/// No C type appears here; the stream and the portal client keep theirs inside the module.

/// The raw video formats a PipeWire screen stream negotiates: exactly Capture Link's six.
public enum ScreenPixelFormat: String, CaseIterable, Sendable {
    case bgrx = "BGRx"
    case bgra = "BGRA"
    case rgbx = "RGBx"
    case rgba = "RGBA"
    case nv12 = "NV12"
    case i420 = "I420"

    public var planeCount: Int {
        switch self {
        case .bgrx, .bgra, .rgbx, .rgba: return 1
        case .nv12: return 2
        case .i420: return 3
        }
    }

    public var isPacked: Bool { planeCount == 1 }
}

/// Where the PipeWire daemon is.
public enum PipeWireRemote: Sendable, Equatable {
    /// libpipewire's default (`PIPEWIRE_REMOTE`, else `pipewire-0` in the runtime directory), or a
    /// socket name or absolute path.
    case daemon(String?)
    /// A connected socket handed over by someone else (the ScreenCast portal's
    /// OpenPipeWireRemote); the stream takes ownership of it.
    case descriptor(Int32)
}

/// Which node to capture.
public enum PipeWireTarget: Sendable, Equatable, CustomStringConvertible {
    /// A node by its id (`pw-cli ls Node`, or the portal's stream id).
    case node(UInt32)
    /// A node by its `node.name`.
    case name(String)

    public var description: String {
        switch self {
        case .node(let id): return "node \(id)"
        case .name(let name): return "node '\(name)'"
        }
    }
}

/// A video node the daemon knows, for `--list` and for "node not found" errors.
public struct PipeWireVideoNode: Sendable, Equatable, CustomStringConvertible {
    public let id: UInt32
    public let name: String
    public let mediaClass: String
    public let nodeDescription: String

    public var description: String {
        let text = nodeDescription.isEmpty || nodeDescription == name ? "" : " (\(nodeDescription))"
        return "\(id) '\(name)' \(mediaClass)\(text)"
    }
}

/// What the stream negotiated with the producer.
public struct ScreenStreamFormat: Sendable, Equatable, CustomStringConvertible {
    public let format: ScreenPixelFormat
    public let width: Int
    public let height: Int

    public var description: String { "\(format.rawValue) \(width)x\(height)" }
}

/// A frame copied into a destination buffer (a ring slot): its layout there, plane by plane.
public struct CopiedScreenFrame: Sendable, Equatable {
    public let format: ScreenPixelFormat
    public let width: Int
    public let height: Int
    public let strides: [Int]
    public let planeOffsets: [Int]
    /// The pointer from the producer's cursor metadata was blended into the pixels.
    public let cursorDrawn: Bool
    /// The producer's frame was larger than the limit and was cropped to its top-left corner.
    public let cropped: Bool
    /// CLOCK_MONOTONIC when the buffer was taken from PipeWire, in ns.
    public let ptsNs: UInt64
}

/// Why PipeWire screen capture could not start or had to stop. Each says what to do.
public enum PipeWireScreenError: Error, Equatable, CustomStringConvertible {
    /// The connection to PipeWire failed (PipeWireCore's error: the socket, the remedy).
    case pipeWire(PipeWireConnectionError)
    case nodeNotFound(PipeWireTarget, videoNodes: [PipeWireVideoNode])
    case notAVideoNode(PipeWireTarget, mediaClass: String)
    case negotiationFailed(target: String, offered: [String], detail: String)
    case streamFailed(String)

    public var description: String {
        switch self {
        case .pipeWire(let error):
            return error.description
        case .nodeNotFound(let target, let nodes):
            let list = nodes.isEmpty ? "there are no video nodes" : "the video nodes are: "
                + nodes.map(\.description).joined(separator: ", ")
            return "no PipeWire \(target); \(list) (pw-cli ls Node lists every node)"
        case .notAVideoNode(let target, let mediaClass):
            return "PipeWire \(target) is not a video node (media.class '\(mediaClass)'); "
                + "choose a Video/Source node (livepush-capture --source pipewire --list)"
        case .negotiationFailed(let target, let offered, let detail):
            let offer = offered.isEmpty ? "offered no raw video format it would name"
                : "offers " + offered.joined(separator: ", ")
            return "format negotiation with PipeWire \(target) failed (\(detail)): it \(offer); "
                + "livepush-capture takes BGRx, BGRA, RGBx, RGBA, NV12 or I420 in shared memory"
        case .streamFailed(let message):
            return "the PipeWire stream failed: \(message)"
        }
    }
}

/// What happened while waiting for the producer.
public enum ScreenStreamEvent: Sendable, Equatable {
    /// A new picture was copied into the offered destination (`takeFrame`).
    case frameReady
    /// A picture arrived whose damage metadata says nothing changed (`takeUnchanged`).
    case unchanged
    /// A picture arrived but no destination was on offer: offer one (a free slot) for the next.
    case needsDestination
    /// Nothing new within the timeout.
    case idle
    /// The producer node went away (its application stopped, the shared window closed).
    case sourceClosed(String)
    /// The PipeWire daemon went away or the stream failed.
    case sourceLost(String)
}
