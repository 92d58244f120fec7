/// Plane rules of the pixel formats (SPEC "Pixel formats"): how many bytes each row of each
/// plane holds, how many rows it has, and whether a FRAME's planes fit in a slot.
public enum FrameGeometry {
    /// Bytes of pixel data in one row of `plane`, and the plane's number of rows.
    public static func planeExtent(_ format: PixelFormat, plane: Int, width: UInt64, height: UInt64)
        -> (rowBytes: UInt64, rows: UInt64)
    {
        let halfWidth = (width + 1) / 2, halfHeight = (height + 1) / 2
        switch (format, plane) {
        case (.bgrx, _), (.bgra, _), (.rgbx, _), (.rgba, _): return (width * 4, height)
        case (.nv12, 0), (.i420, 0): return (width, height)
        case (.nv12, _): return (halfWidth * 2, halfHeight)
        case (.i420, _): return (halfWidth, halfHeight)
        }
    }

    /// A tight layout for helpers: each plane's stride rounded up to `alignment` bytes, planes
    /// one after another from offset 0, each starting on an `alignment` boundary. Returns the
    /// strides, the offsets and the bytes used.
    public static func packedLayout(_ format: PixelFormat, width: UInt32, height: UInt32, alignment: UInt32 = 64)
        -> (strides: [UInt32], offsets: [UInt32], bytes: UInt64)
    {
        var strides: [UInt32] = [], offsets: [UInt32] = []
        var offset: UInt64 = 0
        let align = UInt64(alignment)
        for plane in 0..<format.planeCount {
            let extent = planeExtent(format, plane: plane, width: UInt64(width), height: UInt64(height))
            let stride = (extent.rowBytes + align - 1) / align * align
            strides.append(UInt32(stride))
            offsets.append(UInt32(offset))
            offset += (stride * extent.rows + align - 1) / align * align
        }
        return (strides, offsets, offset)
    }

    /// Checks a FRAME's format, size and planes against the session's limits, with arithmetic
    /// that cannot overflow: every value is at most 32 bits, products are taken in 64 bits
    /// with overflow reported. Throws the violation that names the field.
    static func validate(_ frame: Frame, format: PixelFormat, maxWidth: UInt32, maxHeight: UInt32, slotBytes: UInt64)
        throws(ProtocolViolation)
    {
        guard (1...maxWidth).contains(frame.width), (1...maxHeight).contains(frame.height) else {
            throw ProtocolViolation(.geometry, "FRAME size \(frame.width)x\(frame.height) outside 1x1..\(maxWidth)x\(maxHeight)")
        }
        guard frame.planeCount == UInt32(format.planeCount) else {
            throw ProtocolViolation(.geometry, "FRAME.plane_count is \(frame.planeCount), \(format) has \(format.planeCount)")
        }
        for plane in format.planeCount..<3 where frame.strides[plane] != 0 || frame.planeOffsets[plane] != 0 {
            throw ProtocolViolation(.geometry, "FRAME plane \(plane) is unused by \(format) but has stride "
                + "\(frame.strides[plane]) and offset \(frame.planeOffsets[plane]); both must be 0")
        }
        for plane in 0..<format.planeCount {
            let stride = UInt64(frame.strides[plane])
            let offset = UInt64(frame.planeOffsets[plane])
            let extent = planeExtent(format, plane: plane, width: UInt64(frame.width), height: UInt64(frame.height))
            guard stride >= extent.rowBytes else {
                throw ProtocolViolation(.geometry, "FRAME.stride[\(plane)] \(stride) is below the row size \(extent.rowBytes)")
            }
            if format.isPacked && stride % 4 != 0 {
                throw ProtocolViolation(.geometry, "FRAME.stride[\(plane)] \(stride) is not a multiple of 4")
            }
            let (span, spanOverflow) = stride.multipliedReportingOverflow(by: extent.rows - 1)
            let (lastRowEnd, endOverflow) = span.addingReportingOverflow(extent.rowBytes)
            let (planeEnd, offsetOverflow) = offset.addingReportingOverflow(lastRowEnd)
            guard !spanOverflow, !endOverflow, !offsetOverflow, planeEnd <= slotBytes else {
                throw ProtocolViolation(.geometry, "FRAME plane \(plane) (offset \(offset), stride \(stride), "
                    + "\(extent.rows) rows) ends past the slot's \(slotBytes) bytes")
            }
        }
    }
}
