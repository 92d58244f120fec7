import CPipeWire

#if canImport(Glibc)
import Glibc
#endif

/// The pointer as the producer's cursor metadata (SPA_META_Cursor) last described it. The bitmap
/// is sent only when the shape changes, so it is kept here, converted to straight-alpha BGRA.
struct CursorState {
    var visible = false
    var x = 0
    var y = 0
    var hotspotX = 0
    var hotspotY = 0
    var width = 0
    var height = 0
    var bgra: [UInt8] = []

    mutating func update(from cursor: UnsafeMutablePointer<spa_meta_cursor>) {
        guard cursor.pointee.id != 0 else {
            visible = false
            return
        }
        visible = true
        x = Int(cursor.pointee.position.x)
        y = Int(cursor.pointee.position.y)
        hotspotX = Int(cursor.pointee.hotspot.x)
        hotspotY = Int(cursor.pointee.hotspot.y)
        guard let bitmap = CPipeWire_video_cursor_bitmap(cursor), bitmap.pointee.format != 0 else { return }
        let width = Int(bitmap.pointee.size.width), height = Int(bitmap.pointee.size.height)
        let stride = Int(bitmap.pointee.stride)
        guard bitmap.pointee.offset >= UInt32(MemoryLayout<spa_meta_bitmap>.size), width > 0, height > 0,
              width <= 1024, height <= 1024, stride >= width * 4
        else {
            self.width = 0  // an empty bitmap: the pointer is invisible
            self.height = 0
            return
        }
        // Byte positions of B, G, R, A in the producer's bitmap.
        let order: (Int, Int, Int, Int)
        switch spa_video_format(rawValue: bitmap.pointee.format) {
        case SPA_VIDEO_FORMAT_BGRA: order = (0, 1, 2, 3)
        case SPA_VIDEO_FORMAT_RGBA: order = (2, 1, 0, 3)
        case SPA_VIDEO_FORMAT_ARGB: order = (3, 2, 1, 0)
        case SPA_VIDEO_FORMAT_ABGR: order = (1, 2, 3, 0)
        default: return
        }
        let source = UnsafeRawPointer(bitmap).advanced(by: Int(bitmap.pointee.offset)).assumingMemoryBound(to: UInt8.self)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for row in 0..<height {
            for column in 0..<width {
                let s = source + row * stride + column * 4
                let d = (row * width + column) * 4
                pixels[d] = s[order.0]
                pixels[d + 1] = s[order.1]
                pixels[d + 2] = s[order.2]
                pixels[d + 3] = s[order.3]
            }
        }
        self.width = width
        self.height = height
        bgra = pixels
    }
}

/// The size of one plane of a picture: bytes in a row (without padding) and rows.
struct PlaneLayout {
    var rowBytes: Int
    var rows: Int
}

/// Copies a mapped PipeWire buffer into a slot: once, row by row, rows padded to 64 bytes.
enum ScreenFrameCopier {
    static func planes(_ format: ScreenPixelFormat, width: Int, height: Int) -> [PlaneLayout] {
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        switch format {
        case .bgrx, .bgra, .rgbx, .rgba: return [PlaneLayout(rowBytes: width * 4, rows: height)]
        case .nv12:
            return [PlaneLayout(rowBytes: width, rows: height), PlaneLayout(rowBytes: chromaWidth * 2, rows: chromaHeight)]
        case .i420:
            return [PlaneLayout(rowBytes: width, rows: height), PlaneLayout(rowBytes: chromaWidth, rows: chromaHeight),
                    PlaneLayout(rowBytes: chromaWidth, rows: chromaHeight)]
        }
    }

    static func alignedTo64(_ value: Int) -> Int { (value + 63) & ~63 }

    /// Where each plane of a mapped buffer starts and its stride, checked against the mapped size: one
    /// spa_data per plane, or all planes one after the other in the first (then chroma strides follow
    /// the luma stride, halved when `halvesChromaStride`: I420). Nil when a plane is missing or ends
    /// past its data.
    static func sourcePlanes(_ buffer: UnsafeMutablePointer<spa_buffer>, planes fullPlanes: [PlaneLayout],
                             halvesChromaStride: Bool) -> [(UnsafeRawPointer, Int)]?
    {
        guard let datas = buffer.pointee.datas else { return nil }
        let dataCount = Int(buffer.pointee.n_datas)
        var sources: [(UnsafeRawPointer, Int)] = []
        var previousEnd = 0
        for (index, plane) in fullPlanes.enumerated() {
            let data: spa_data
            var offset: Int
            var stride: Int
            if index < dataCount {
                data = datas[index]
                guard let chunk = data.chunk else { return nil }
                offset = Int(chunk.pointee.offset % max(1, data.maxsize))
                stride = Int(chunk.pointee.stride)
                if stride <= 0 { stride = plane.rowBytes }
            } else {
                data = datas[0]
                let lumaStride = sources.isEmpty ? plane.rowBytes : sources[0].1
                stride = halvesChromaStride ? lumaStride / 2 : lumaStride
                offset = previousEnd
            }
            guard let pointer = data.data else { return nil }
            let end = offset + stride * (plane.rows - 1) + plane.rowBytes
            guard stride >= plane.rowBytes, end <= Int(data.maxsize) else { return nil }
            if index >= dataCount || dataCount == 1 { previousEnd = offset + stride * plane.rows }
            sources.append((UnsafeRawPointer(pointer).advanced(by: offset), stride))
        }
        return sources
    }

    static func copy(
        _ buffer: UnsafeMutablePointer<spa_buffer>, format: ScreenStreamFormat,
        into destination: UnsafeMutableRawBufferPointer, maxWidth: Int, maxHeight: Int, ptsNs: UInt64,
        cursor: CursorState?
    ) -> CopiedScreenFrame? {
        let width = min(format.width, maxWidth), height = min(format.height, maxHeight)
        guard width > 0, height > 0, let base = destination.baseAddress else { return nil }
        let fullPlanes = planes(format.format, width: format.width, height: format.height)
        let copyPlanes = planes(format.format, width: width, height: height)
        guard let sources = sourcePlanes(buffer, planes: fullPlanes, halvesChromaStride: format.format == .i420)
        else { return nil }

        var strides: [Int] = []
        var offsets: [Int] = []
        var next = 0
        for plane in copyPlanes {
            let stride = alignedTo64(plane.rowBytes)
            strides.append(stride)
            offsets.append(next)
            next = alignedTo64(next + stride * plane.rows)
        }
        guard let last = copyPlanes.last,
              offsets[offsets.count - 1] + strides[strides.count - 1] * (last.rows - 1) + last.rowBytes <= destination.count
        else { return nil }

        for (index, plane) in copyPlanes.enumerated() {
            let (source, sourceStride) = sources[index]
            let target = base.advanced(by: offsets[index])
            if sourceStride == strides[index] && plane.rowBytes == fullPlanes[index].rowBytes {
                memcpy(target, source, sourceStride * (plane.rows - 1) + plane.rowBytes)
            } else {
                for row in 0..<plane.rows {
                    memcpy(target.advanced(by: row * strides[index]), source.advanced(by: row * sourceStride),
                           plane.rowBytes)
                }
            }
        }
        var cursorDrawn = false
        if let cursor, cursor.visible, cursor.width > 0 {
            cursorDrawn = blend(cursor, format: format.format, base: base, strides: strides, offsets: offsets,
                                width: width, height: height)
        }
        return CopiedScreenFrame(format: format.format, width: width, height: height, strides: strides,
                                 planeOffsets: offsets, cursorDrawn: cursorDrawn,
                                 cropped: width < format.width || height < format.height, ptsNs: ptsNs)
    }

    /// Blends the pointer into the copied frame; returns whether any of it was on the frame.
    private static func blend(
        _ cursor: CursorState, format: ScreenPixelFormat, base: UnsafeMutableRawPointer, strides: [Int],
        offsets: [Int], width: Int, height: Int
    ) -> Bool {
        let left = cursor.x - cursor.hotspotX, top = cursor.y - cursor.hotspotY
        let x0 = max(0, left), y0 = max(0, top)
        let x1 = min(width, left + cursor.width), y1 = min(height, top + cursor.height)
        guard x0 < x1, y0 < y1 else { return false }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        cursor.bgra.withUnsafeBufferPointer { pixels in
            for y in y0..<y1 {
                for x in x0..<x1 {
                    let c = ((y - top) * cursor.width + (x - left)) * 4
                    let alpha = Int(pixels[c + 3])
                    if alpha == 0 { continue }
                    let b = Int(pixels[c]), g = Int(pixels[c + 1]), r = Int(pixels[c + 2])
                    func mix(_ pointer: UnsafeMutablePointer<UInt8>, _ value: Int) {
                        pointer.pointee = UInt8((value * alpha + Int(pointer.pointee) * (255 - alpha) + 127) / 255)
                    }
                    switch format {
                    case .bgrx, .bgra, .rgbx, .rgba:
                        let p = bytes + offsets[0] + y * strides[0] + x * 4
                        let (first, third) = format == .bgrx || format == .bgra ? (b, r) : (r, b)
                        mix(p, first)
                        mix(p + 1, g)
                        mix(p + 2, third)
                    case .nv12, .i420:
                        // BT.709 limited range (Capture Link's YUV), 8-bit fixed point.
                        mix(bytes + offsets[0] + y * strides[0] + x, (47 * r + 157 * g + 16 * b + 128) / 256 + 16)
                        if x % 2 == 0 && y % 2 == 0 {
                            let u = (-26 * r - 87 * g + 112 * b + 128) / 256 + 128
                            let v = (112 * r - 102 * g - 10 * b + 128) / 256 + 128
                            if format == .nv12 {
                                let p = bytes + offsets[1] + (y / 2) * strides[1] + (x / 2) * 2
                                mix(p, u)
                                mix(p + 1, v)
                            } else {
                                mix(bytes + offsets[1] + (y / 2) * strides[1] + x / 2, u)
                                mix(bytes + offsets[2] + (y / 2) * strides[2] + x / 2, v)
                            }
                        }
                    }
                }
            }
        }
        return true
    }
}
