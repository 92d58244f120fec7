import CPipeWire
import PipeWireCameras

#if canImport(Glibc)
import Glibc
#endif

/// The camera's side of the video stream: finding the camera and its modes on the connection, the
/// format offered for one chosen mode, the format the camera negotiated, and each picture written
/// into the slot by `CameraPictureWriter`.
extension VideoStreamState {
    /// The camera `text` names (nil: the first camera) among this connection's nodes, with its modes.
    /// `appearWithinMs`: how long a camera not there yet may take to appear (a connection the Camera
    /// portal opened sees the cameras only once WirePlumber has granted them to it, a moment later).
    func findCamera(_ text: String?, appearWithinMs: Int = 0, timeoutMs: Int) throws(CameraError) -> CameraInfo {
        let (node, nodes) = withLock {
            waitLocked(timeoutMs: appearWithinMs) { VideoSourceNode.find(text, in: Array(sourceNodes.values)) != nil }
            return (VideoSourceNode.find(text, in: Array(sourceNodes.values)), Array(sourceNodes.values))
        }
        guard let node else {
            guard let text else { throw .noCamera }
            let cameras = nodes.filter(\.isCamera).sorted { $0.id < $1.id }.map { $0.info(offers: []) }
            throw .notFound(wanted: text, cameras: cameras)
        }
        return node.info(offers: nodeOffers(nodeID: node.id, timeoutMs: timeoutMs))
    }

    /// Connects a stream to `camera` asking for `mode` (exactly one EnumFormat) and waits for its format.
    func connectCamera(_ camera: CameraInfo, mode: CameraMode) throws(PipeWireScreenError) {
        try withLock { () throws(PipeWireScreenError) in
            guard let node = allNodes[camera.id] else {
                throw .streamFailed("the camera \(camera) went away before its stream was connected")
            }
            cameraMode = mode
            options.drawCursor = false
            let subtype = mode.format == .mjpeg ? SPA_MEDIA_SUBTYPE_mjpg.rawValue : SPA_MEDIA_SUBTYPE_raw.rawValue
            let format: spa_video_format = switch mode.format {
            case .yuy2: SPA_VIDEO_FORMAT_YUY2
            case .nv12: SPA_VIDEO_FORMAT_NV12
            case .i420: SPA_VIDEO_FORMAT_I420
            case .mjpeg: SPA_VIDEO_FORMAT_UNKNOWN
            }
            let offer = CPipeWire_video_build_camera_format(
                formatOffer, 512, subtype, format.rawValue, UInt32(mode.width), UInt32(mode.height),
                mode.frameRate.numerator, mode.frameRate.denominator)
            try connectLocked(node: node, role: "Camera", streamName: "livepush-camera", params: [offer])
        }
    }

    /// The camera's Format param (PipeWire's thread, lock held): the negotiated mode, and the slot's
    /// layout it is converted into.
    func cameraFormatChanged(_ param: UnsafePointer<spa_pod>, asked: CameraMode) {
        var subtype: UInt32 = 0, rawFormat: UInt32 = 0, width: UInt32 = 0, height: UInt32 = 0
        var rateNumerator: UInt32 = 0, rateDenominator: UInt32 = 0, matrix: UInt32 = 0
        guard CPipeWire_video_parse_camera_format(param, &subtype, &rawFormat, &width, &height, &rateNumerator,
                                                  &rateDenominator, &matrix) == 0
        else {
            unsupportedFormat = CPipeWire_media_subtype_name(subtype).map { String(cString: $0) } ?? "a format it did not name"
            wake()
            return
        }
        let cameraFormat = subtype == SPA_MEDIA_SUBTYPE_mjpg.rawValue ? .mjpeg : CameraFormat(rawVideoFormat: rawFormat)
        guard let cameraFormat, width > 0, height > 0 else {
            unsupportedFormat = videoFormatName(rawFormat)
            wake()
            return
        }
        let colorMatrix: CameraColorMatrix = matrix == SPA_VIDEO_COLOR_MATRIX_BT709.rawValue ? .bt709
            : matrix == SPA_VIDEO_COLOR_MATRIX_BT601.rawValue ? .bt601 : asked.colorMatrix
        let negotiated = CameraMode(format: cameraFormat, width: Int(width), height: Int(height),
                                    frameRate: rateNumerator > 0 ? CameraFrameRate(numerator: rateNumerator,
                                                                                   denominator: rateDenominator)
                                        : asked.frameRate,
                                    colorMatrix: colorMatrix)
        let slot = ScreenStreamFormat(format: CameraPictureWriter.slotFormat(for: negotiated), width: negotiated.width,
                                      height: negotiated.height)
        if slot != format { missedChange = true }
        cameraNegotiated = negotiated
        format = slot
        requestBuffers(damageAndCursor: false)
        wake()
    }

    /// One camera picture into the offered slot (PipeWire's thread, lock held). Its time is the
    /// buffer's own (SPA_META_Header pts: a V4L2 buffer's CLOCK_MONOTONIC capture time) when that is
    /// plausible (within the last second), else now.
    func writeCameraPicture(_ buffer: UnsafeMutablePointer<spa_buffer>, mode: CameraMode,
                            into destination: UnsafeMutableRawBufferPointer, maxWidth: Int, maxHeight: Int,
                            nowNs: UInt64) -> CopiedScreenFrame?
    {
        var ptsNs = nowNs
        if let header = spa_buffer_find_meta_data(buffer, SPA_META_Header.rawValue, MemoryLayout<spa_meta_header>.size)?
            .assumingMemoryBound(to: spa_meta_header.self), header.pointee.pts > 0
        {
            let stamp = UInt64(header.pointee.pts)
            if stamp <= nowNs && nowNs - stamp < 1_000_000_000 { ptsNs = stamp }
        }
        let result = CameraPictureWriter.write(buffer, mode: mode, into: destination, maxWidth: maxWidth,
                                               maxHeight: maxHeight, ptsNs: ptsNs) {
            if jpegDecoder == nil { jpegDecoder = JPEGFrameDecoder() }
            return jpegDecoder
        }
        switch result {
        case .success(let frame):
            return frame
        case .failure(.corrupt(let why)):
            corruptedDropped += 1
            debugLog("camera frame dropped: \(why)")
            return nil
        case .failure(.badGeometry):
            debugLog("camera frame dropped: its planes do not fit the buffer or the slot")
            return nil
        }
    }
}
