import CPipeWire
import CommandLineSupport
import PipeWireCore

#if canImport(Glibc)
import Glibc
#endif

/// A Video/Source node as the registry announced it, with what tells a camera apart.
package struct VideoSourceNode: Sendable, Equatable {
    package let id: UInt32
    package let name: String
    package let nodeDescription: String
    package let mediaClass: String
    /// `media.role`: "Camera" for what WirePlumber makes of V4L2 and libcamera devices.
    package let mediaRole: String
    package let objectPath: String

    /// A Video/Source with the Camera role (what xdg-desktop-portal's Camera interface counts too).
    package var isCamera: Bool { mediaClass == "Video/Source" && mediaRole == "Camera" }

    /// Reads a registry global's properties (on PipeWire's thread); nil for anything but a node.
    package init?(id: UInt32, type: String, props: UnsafePointer<spa_dict>?) {
        guard type == String(cString: CPipeWire_PW_TYPE_INTERFACE_Node()) else { return nil }
        func value(_ key: String) -> String { props.flatMap { spa_dict_lookup($0, key) }.map { String(cString: $0) } ?? "" }
        self.id = id
        name = value(PW_KEY_NODE_NAME)
        nodeDescription = value(PW_KEY_NODE_DESCRIPTION)
        mediaClass = value(PW_KEY_MEDIA_CLASS)
        mediaRole = value(PW_KEY_MEDIA_ROLE)
        objectPath = value(PW_KEY_OBJECT_PATH)
    }

    package func info(offers: [VideoFormatOffer]) -> CameraInfo {
        CameraInfo(id: id, name: name, nodeDescription: nodeDescription, objectPath: objectPath, offers: offers)
    }

    /// The node `--camera TEXT` names among `nodes` (its id, node.name, object.path or description; a
    /// camera before another video source), or with no TEXT the camera with the lowest id.
    package static func find(_ text: String?, in nodes: [VideoSourceNode]) -> VideoSourceNode? {
        let sorted = nodes.sorted { $0.id < $1.id }
        guard let text else { return sorted.first(where: \.isCamera) }
        let video = sorted.filter { $0.mediaClass.contains("Video") }
        return video.filter(\.isCamera).first { $0.info(offers: []).matches(text) }
            ?? video.first { $0.info(offers: []).matches(text) }
    }
}

/// The cameras of a PipeWire daemon and what each offers (`livepush devices`, `livepush doctor`,
/// `livepush-capture --list --source camera`). Each call makes its own connection.
public enum CameraDevices {
    /// Every camera (Video/Source nodes with the Camera role), by id, with its offers.
    /// - Parameters:
    ///   - remote: the daemon's socket (a name in the runtime directory or a path); nil for
    ///     libpipewire's default (`PIPEWIRE_REMOTE`, else `pipewire-0`).
    public static func list(remote: String? = nil, timeoutMs: Int = 2000) throws(CameraError) -> [CameraInfo] {
        let listing = try CameraListing(remote: remote, timeoutMs: timeoutMs)
        defer { listing.close() }
        return listing.cameras(timeoutMs: timeoutMs)
    }

    /// The camera `--camera TEXT` names (nil: the first camera), found as livepush-capture finds it, with
    /// its offers; what `livepush screen` checks before anything starts.
    /// - Throws: `.notFound` (with the cameras there are, and the nearest name), `.noCamera`, or
    ///   `.noUsableMode` when the camera offers nothing livepush-capture takes (in `format`, when given);
    ///   `.pipeWire` when PipeWire cannot be reached.
    public static func resolve(_ text: String?, format: CameraFormat?, remote: String? = nil,
                               timeoutMs: Int = 2000) throws(CameraError) -> CameraInfo
    {
        let listing = try CameraListing(remote: remote, timeoutMs: timeoutMs)
        defer { listing.close() }
        let camera = try listing.find(text, timeoutMs: timeoutMs)
        guard CameraModeChoice.choose(camera.offers, CameraModeRequest(format: format)) != nil else {
            throw .noUsableMode(camera: camera.description, offered: NodeFormatQuery.names(camera.offers),
                                wantedFormat: format)
        }
        return camera
    }
}

extension CameraInfo {
    /// The camera a mistyped `--camera TEXT` most likely meant: the only one whose name, description or
    /// object.path holds TEXT (any case), else the one whose name or description is nearest by edit
    /// distance, when near enough to be a typo.
    static func nearest(to text: String, in cameras: [CameraInfo]) -> CameraInfo? {
        let wanted = text.lowercased()
        let holding = cameras.filter { camera in
            [camera.name, camera.nodeDescription, camera.objectPath].contains { $0.lowercased().contains(wanted) }
        }
        if holding.count == 1 { return holding[0] }
        var byName: [String: CameraInfo] = [:]
        for camera in cameras.reversed() {
            for name in [camera.name, camera.nodeDescription] where !name.isEmpty { byName[name.lowercased()] = camera }
        }
        return Suggestion.nearest(to: wanted, in: Array(byName.keys).sorted()).flatMap { byName[$0] }
    }
}

/// One connection that collects the video source nodes of the registry.
private final class CameraListing {
    private let connection: PipeWireConnection
    private var nodes: [UInt32: VideoSourceNode] = [:]

    init(remote: String?, timeoutMs: Int) throws(CameraError) {
        do throws(PipeWireConnectionError) {
            connection = try PipeWireConnection(name: "livepush-cams")
        } catch {
            throw .pipeWire(error.description)
        }
        let unmanaged = Unmanaged.passUnretained(self)
        connection.onGlobal = { id, type, props in
            guard let node = VideoSourceNode(id: id, type: type, props: props) else { return }
            unmanaged.takeUnretainedValue().nodes[id] = node
        }
        connection.onGlobalRemove = { id in unmanaged.takeUnretainedValue().nodes[id] = nil }
        do throws(PipeWireConnectionError) {
            try connection.withLock { () throws(PipeWireConnectionError) in
                try connection.connectLocked(remote: .daemon(remote), timeoutMs: timeoutMs)
            }
        } catch {
            connection.close()
            throw .pipeWire(error.description)
        }
    }

    func cameras(timeoutMs: Int) -> [CameraInfo] {
        let cameras = connection.withLock { nodes.values.filter(\.isCamera).sorted { $0.id < $1.id } }
        return cameras.map { node in
            let offers = NodeFormatQuery().run(registry: connection.registry, core: connection.core,
                                               threadLoop: connection.threadLoop, nodeID: node.id, timeoutMs: timeoutMs)
            return node.info(offers: offers)
        }
    }

    /// The node `--camera TEXT` names (`VideoSourceNode.find`), with its offers.
    func find(_ text: String?, timeoutMs: Int) throws(CameraError) -> CameraInfo {
        let (node, cameras) = connection.withLock {
            (VideoSourceNode.find(text, in: Array(nodes.values)), nodes.values.filter(\.isCamera).sorted { $0.id < $1.id })
        }
        guard let node else {
            guard let text else { throw .noCamera }
            throw .notFound(wanted: text, cameras: cameras.map { $0.info(offers: []) })
        }
        let offers = NodeFormatQuery().run(registry: connection.registry, core: connection.core,
                                           threadLoop: connection.threadLoop, nodeID: node.id, timeoutMs: timeoutMs)
        return node.info(offers: offers)
    }

    func close() { connection.close() }
}
