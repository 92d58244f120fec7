import CJPEG
import CPipeWire
import CYUV
import PipeWireCameras

/// libjpeg-turbo's decompressor for one camera's Motion-JPEG frames (`CJPEG`), kept from frame to
/// frame. Used on PipeWire's thread only (under the stream's lock).
final class JPEGFrameDecoder {
    private let decoder: OpaquePointer

    init?() {
        guard let decoder = CJPEG_decoder_new() else { return nil }
        self.decoder = decoder
    }

    deinit { CJPEG_decoder_free(decoder) }

    enum Outcome: Equatable {
        case decoded
        /// libjpeg warned: corrupt or truncated data (the picture would be partly grey).
        case corrupt(String)
        /// Not a JPEG of the negotiated size, or libjpeg failed.
        case failed(String)
    }

    /// Decodes `jpeg` (a `width` x `height` picture) into BGRx rows at `destination`, `stride` bytes
    /// apart, cropped to `maxWidth` x `maxHeight`.
    func decode(_ jpeg: UnsafeRawBufferPointer, width: Int, height: Int, into destination: UnsafeMutableRawPointer,
                stride: Int, maxWidth: Int, maxHeight: Int) -> Outcome
    {
        let result = CJPEG_decode_bgrx(decoder, jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self), jpeg.count,
                                       UInt32(width), UInt32(height), destination.assumingMemoryBound(to: UInt8.self),
                                       stride, UInt32(maxWidth), UInt32(maxHeight))
        switch result {
        case 0: return .decoded
        case -2: return .corrupt(String(cString: CJPEG_decoder_error(decoder)))
        default: return .failed(String(cString: CJPEG_decoder_error(decoder)))
        }
    }
}

/// A camera's picture into a ring slot, in one pass straight into the slot: YUY2, NV12 and I420 in
/// BT.601 (a webcam's YUV) converted to BGRx by libyuv (`YUY2ToARGB`, `NV12ToARGB`, `I420ToARGB`),
/// MJPEG decoded to BGRx by libjpeg-turbo, and NV12 or I420 a camera says are BT.709 copied as they
/// are (Capture Link's own YUV, SPEC §8.1). BGRx is what keeps the colours: the protocol's YUV is
/// BT.709, a webcam's BT.601 (and JPEG's full range), and no libyuv call turns one into the other;
/// the pusher's BGRx path is its fastest (ARGBToI420).
enum CameraPictureWriter {
    /// The layout the slot gets for pictures in `mode`.
    static func slotFormat(for mode: CameraMode) -> ScreenPixelFormat {
        switch (mode.format, mode.colorMatrix) {
        case (.nv12, .bt709): return .nv12
        case (.i420, .bt709): return .i420
        default: return .bgrx
        }
    }

    enum Failure: Error, Equatable {
        /// A buffer whose planes do not fit its memory, or a slot too small: dropped.
        case badGeometry
        /// A JPEG libjpeg could not decode, or decoded with warnings: dropped and counted as corrupted.
        case corrupt(String)
    }

    static func write(_ buffer: UnsafeMutablePointer<spa_buffer>, mode: CameraMode,
                      into destination: UnsafeMutableRawBufferPointer, maxWidth: Int, maxHeight: Int, ptsNs: UInt64,
                      decoder: () -> JPEGFrameDecoder?) -> Result<CopiedScreenFrame, Failure>
    {
        let slotFormat = slotFormat(for: mode)
        if slotFormat != .bgrx {
            let frame = ScreenFrameCopier.copy(buffer, format: ScreenStreamFormat(format: slotFormat, width: mode.width,
                                                                                  height: mode.height),
                                               into: destination, maxWidth: maxWidth, maxHeight: maxHeight, ptsNs: ptsNs,
                                               cursor: nil)
            return frame.map { .success($0) } ?? .failure(.badGeometry)
        }
        let width = min(mode.width, maxWidth), height = min(mode.height, maxHeight)
        let stride = ScreenFrameCopier.alignedTo64(width * 4)
        guard width > 0, height > 0, let target = destination.baseAddress, stride * (height - 1) + width * 4 <= destination.count
        else { return .failure(.badGeometry) }
        let frame = CopiedScreenFrame(format: .bgrx, width: width, height: height, strides: [stride], planeOffsets: [0],
                                      cursorDrawn: false, cropped: width < mode.width || height < mode.height,
                                      ptsNs: ptsNs)
        let argb = target.assumingMemoryBound(to: UInt8.self)
        let chromaWidth = (mode.width + 1) / 2
        let result: Int32
        switch mode.format {
        case .yuy2:
            guard let planes = ScreenFrameCopier.sourcePlanes(
                buffer, planes: [PlaneLayout(rowBytes: chromaWidth * 4, rows: mode.height)], halvesChromaStride: false)
            else { return .failure(.badGeometry) }
            result = YUY2ToARGB(planes[0].0.assumingMemoryBound(to: UInt8.self), Int32(planes[0].1), argb, Int32(stride),
                                Int32(width), Int32(height))
        case .nv12:
            guard let planes = ScreenFrameCopier.sourcePlanes(
                buffer, planes: ScreenFrameCopier.planes(.nv12, width: mode.width, height: mode.height),
                halvesChromaStride: false)
            else { return .failure(.badGeometry) }
            result = NV12ToARGB(planes[0].0.assumingMemoryBound(to: UInt8.self), Int32(planes[0].1),
                                planes[1].0.assumingMemoryBound(to: UInt8.self), Int32(planes[1].1), argb, Int32(stride),
                                Int32(width), Int32(height))
        case .i420:
            guard let planes = ScreenFrameCopier.sourcePlanes(
                buffer, planes: ScreenFrameCopier.planes(.i420, width: mode.width, height: mode.height),
                halvesChromaStride: true)
            else { return .failure(.badGeometry) }
            result = I420ToARGB(planes[0].0.assumingMemoryBound(to: UInt8.self), Int32(planes[0].1),
                                planes[1].0.assumingMemoryBound(to: UInt8.self), Int32(planes[1].1),
                                planes[2].0.assumingMemoryBound(to: UInt8.self), Int32(planes[2].1), argb, Int32(stride),
                                Int32(width), Int32(height))
        case .mjpeg:
            guard let jpeg = jpegBytes(buffer) else { return .failure(.badGeometry) }
            guard let decoder = decoder() else { return .failure(.corrupt("no memory for a JPEG decoder")) }
            switch decoder.decode(jpeg, width: mode.width, height: mode.height, into: target, stride: stride,
                                  maxWidth: width, maxHeight: height)
            {
            case .decoded: return .success(frame)
            case .corrupt(let why), .failed(let why): return .failure(.corrupt(why))
            }
        }
        return result == 0 ? .success(frame) : .failure(.badGeometry)
    }

    /// The bytes of the JPEG in the buffer's first data: its chunk, checked against the mapped size.
    private static func jpegBytes(_ buffer: UnsafeMutablePointer<spa_buffer>) -> UnsafeRawBufferPointer? {
        guard buffer.pointee.n_datas > 0, let datas = buffer.pointee.datas, let pointer = datas[0].data,
              let chunk = datas[0].chunk
        else { return nil }
        let maxSize = Int(datas[0].maxsize)
        let offset = Int(chunk.pointee.offset % max(1, datas[0].maxsize)), size = Int(chunk.pointee.size)
        guard size > 0, offset + size <= maxSize else { return nil }
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer).advanced(by: offset), count: size)
    }
}
