import CPipeWire
import PipeWireCameras
import PipeWireCore

#if canImport(Glibc)
import Glibc
#endif

/// Options of a PipeWire screen stream.
public struct PipeWireScreenOptions: Sendable {
    public var remote: PipeWireRemote = .daemon(nil)
    public var target: PipeWireTarget
    /// The largest frame accepted in negotiation (the pusher's limit); a producer that cannot go
    /// this small is still taken, and its frames are cropped when copied.
    public var maxWidth = 16384
    public var maxHeight = 16384
    /// Ask for cursor metadata and blend the pointer into the frames.
    public var drawCursor = true
    /// How long connecting, finding the node and negotiating a format may take.
    public var timeoutMs = 5000

    public init(target: PipeWireTarget) { self.target = target }
}

/// A PipeWire video stream connected to one node: it keeps the newest picture the producer sent and
/// writes it once into memory the caller gives (a Capture Link ring slot). `PipeWireScreenStream`
/// copies a screen's pictures with the pointer drawn in; `PipeWireCameraStream` converts a camera's.
///
/// Use from one thread. PipeWire's callbacks run on its own thread (a `pw_thread_loop`) and reach
/// the shared state through `Unmanaged`; every access on either side holds the thread loop's lock.
public class PipeWireVideoStream {
    let state: VideoStreamState

    init(state: VideoStreamState) { self.state = state }

    deinit { state.close() }

    /// The node being captured.
    public var node: PipeWireVideoNode { state.withLock { state.targetNode! } }

    /// The layout of the pictures written into the offered memory now (it changes when the producer
    /// changes size or format).
    public var format: ScreenStreamFormat { state.withLock { state.format! } }

    /// Frames dropped as corrupted: flagged so by the producer (SPA_CHUNK_FLAG_CORRUPTED), or a camera's
    /// JPEG that libjpeg-turbo could not decode cleanly.
    public var corruptedFramesDropped: Int { state.withLock { state.corruptedDropped } }

    /// The time one write into the offered memory took (a copy with the cursor blended, or a camera
    /// picture's conversion or decoding), in ms, at percentile `fraction` (0.5 for the median) of the
    /// last 4096; 0 before any.
    public func copyMs(percentile fraction: Double) -> Double {
        let sorted = state.withLock { Array(state.copyDurationsNs.prefix(min(state.copies, state.copyDurationsNs.count))) }
            .sorted()
        guard !sorted.isEmpty else { return 0 }
        return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]) / 1e6
    }

    /// Buffers whose damage metadata said nothing changed.
    public var unchangedBuffers: Int { state.withLock { state.unchangedBuffers } }

    /// The kind of memory of the last picture's buffer: "memfd", "memptr" (both shared memory,
    /// copied once into the ring), "dmabuf", or "none" before any picture.
    public var bufferType: String {
        switch state.withLock({ state.lastDataType }) {
        case SPA_DATA_MemPtr.rawValue: return "memptr"
        case SPA_DATA_MemFd.rawValue: return "memfd"
        case SPA_DATA_DmaBuf.rawValue: return "dmabuf"
        case 0: return "none"
        case let other: return "type\(other)"
        }
    }

    /// Frames that arrived while no destination was offered (the pusher held every slot).
    public var framesWithoutDestination: Int { state.withLock { state.droppedWithoutTarget } }

    /// Waits up to `timeoutMs` for a written picture, an unchanged one, a picture that found no
    /// destination, the producer going away, or the daemon failing.
    public func wait(timeoutMs: Int) -> ScreenStreamEvent { state.wait(timeoutMs: timeoutMs) }

    /// Offers memory (a free ring slot) for the next picture: PipeWire's thread writes each new
    /// picture into it as it arrives (at most `maxWidth` x `maxHeight`, larger frames cropped to
    /// their top-left corner, rows padded to 64 bytes) and gives the buffer back at once. A newer
    /// picture overwrites one not yet taken. The memory must stay valid until `takeFrame` returns it
    /// or `withdrawDestination` is called.
    public func offerDestination(_ destination: UnsafeMutableRawBufferPointer, maxWidth: Int, maxHeight: Int) {
        state.withLock { state.target = (destination, maxWidth, maxHeight) }
    }

    /// Whether memory is on offer.
    public var hasDestination: Bool { state.withLock { state.target != nil } }

    /// The picture written into the offered memory, if one was; the offer ends with it.
    public func takeFrame() -> CopiedScreenFrame? {
        state.withLock {
            guard let frame = state.filled else { return nil }
            state.filled = nil
            state.target = nil
            return frame
        }
    }

    /// Whether a picture that did not change (by its damage metadata) arrived since the last call.
    public func takeUnchanged() -> Bool {
        state.withLock {
            defer { state.unchangedSeen = false }
            return state.unchangedSeen
        }
    }

    /// Ends the offer of memory (the caller needs it back).
    public func withdrawDestination() { state.withLock { state.target = nil; state.filled = nil } }

    /// Disconnects; the stream cannot be used afterwards.
    public func close() { state.close() }
}

/// A screen (or any raw video node) on PipeWire: it negotiates one of Capture Link's six formats at the
/// size the producer offers and copies each picture once, blending in the cursor from the producer's
/// metadata.
public final class PipeWireScreenStream: PipeWireVideoStream {
    /// Connects to the daemon, finds the node, connects a stream and waits for the format.
    public init(options: PipeWireScreenOptions) throws(PipeWireScreenError) {
        PipeWireLibraryOnce.initialize()
        super.init(state: try VideoStreamState(options: options))
    }

    /// Asks the producer for frames no larger than `maxWidth` x `maxHeight` (renegotiation); a
    /// producer that cannot scale keeps its size.
    public func requestMaximumSize(width: Int, height: Int) { state.updateFormatOffer(maxWidth: width, maxHeight: height) }

    /// The video nodes of the daemon (for `--list`).
    public static func videoNodes(remote: PipeWireRemote = .daemon(nil), timeoutMs: Int = 2000) throws(PipeWireScreenError)
        -> [PipeWireVideoNode]
    {
        PipeWireLibraryOnce.initialize()
        let state = try VideoStreamState(listingOnly: remote, timeoutMs: timeoutMs)
        defer { state.close() }
        return state.withLock { state.videoNodes }
    }
}

/// `pw_init` once per process.
enum PipeWireLibraryOnce {
    static func initialize() { PipeWireConnection.initializeLibrary() }
}

let formatTable: [(ScreenPixelFormat, spa_video_format)] = [
    (.bgrx, SPA_VIDEO_FORMAT_BGRx), (.bgra, SPA_VIDEO_FORMAT_BGRA), (.rgbx, SPA_VIDEO_FORMAT_RGBx),
    (.rgba, SPA_VIDEO_FORMAT_RGBA), (.nv12, SPA_VIDEO_FORMAT_NV12), (.i420, SPA_VIDEO_FORMAT_I420),
]

func spaFormatName(_ value: UInt32) -> String { videoFormatName(value) }

/// The largest cursor bitmap asked for in the cursor metadata.
private let debugEnabled = getenv("LIVEPUSH_PIPEWIRE_DEBUG") != nil

func debugLog(_ text: String) {
    guard debugEnabled else { return }
    let line = Array((text + "\n").utf8)
    _ = write(2, line, line.count)
}
