import CYUV

/// What the pipeline draws on pictures itself: a copy, a dimmed copy, a short notice.
extension VideoFrame {
    /// Copies `other`'s picture (the same size) into this one.
    public func copyPicture(from other: VideoFrame) {
        precondition(other.width == width && other.height == height, "copyPicture: sizes differ")
        for index in 0..<3 {
            let source = other.plane(index), destination = plane(index)
            let rowBytes = index == 0 ? width : width / 2, rows = index == 0 ? height : height / 2
            CopyPlane(source.data, source.stride, destination.data, destination.stride, Int32(rowBytes), Int32(rows))
        }
    }

    /// Darkens the picture toward black and its colours toward grey: each value keeps
    /// `percent` % of its distance from black (Y 16) or from neutral (U, V 128).
    public func dim(toPercent percent: Int) {
        for index in 0..<3 {
            let planeData = plane(index)
            let rowBytes = index == 0 ? width : width / 2, rows = index == 0 ? height : height / 2
            let base = index == 0 ? 16 : 128
            for row in 0..<rows {
                let line = planeData.data + row * Int(planeData.stride)
                for column in 0..<rowBytes {
                    line[column] = UInt8(base + (Int(line[column]) - base) * percent / 100)
                }
            }
        }
    }

    /// Writes `text` (A–Z, 0–9, space and . , ! ? -) in white on a black band across the
    /// picture's middle, with a 5x7 pixel font scaled to about a twentieth of the height.
    public func drawNotice(_ text: String) {
        let scale = max(1, height / 20 / 8)
        let glyphWidth = 6 * scale
        let textWidth = min(width, text.count * glyphWidth)
        let bandTop = max(0, height / 2 - 6 * scale), bandBottom = min(height, height / 2 + 6 * scale)
        let luma = plane(0)
        for row in bandTop..<bandBottom {
            let line = luma.data + row * Int(luma.stride)
            for column in 0..<width { line[column] = 16 }
        }
        for index in 0..<3 where index > 0 {
            let chroma = plane(index)
            for row in (bandTop / 2)..<(bandBottom / 2) {
                let line = chroma.data + row * Int(chroma.stride)
                for column in 0..<(width / 2) { line[column] = 128 }
            }
        }
        var x = (width - textWidth) / 2
        let top = height / 2 - 7 * scale / 2
        for character in text.uppercased() {
            guard x + glyphWidth <= width else { break }
            let rows = NoticeFont.glyph(character)
            for (rowIndex, bits) in rows.enumerated() {
                for column in 0..<5 where bits & (0x10 >> column) != 0 {
                    for dy in 0..<scale {
                        let line = luma.data + (top + rowIndex * scale + dy) * Int(luma.stride)
                        for dx in 0..<scale { line[x + column * scale + dx] = 235 }
                    }
                }
            }
            x += glyphWidth
        }
    }
}

/// A 5x7 pixel font for notices: each glyph is 7 rows of 5 bits, the leftmost pixel first.
private enum NoticeFont {
    static func glyph(_ character: Character) -> [UInt8] {
        glyphs[character] ?? glyphs["?"]!
    }

    private static let glyphs: [Character: [UInt8]] = [
        " ": [0, 0, 0, 0, 0, 0, 0],
        "A": [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11], "B": [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        "C": [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E], "D": [0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E],
        "E": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F], "F": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        "G": [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F], "H": [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        "I": [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E], "J": [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        "K": [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11], "L": [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        "M": [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11], "N": [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        "O": [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E], "P": [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        "Q": [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D], "R": [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        "S": [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E], "T": [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        "U": [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E], "V": [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        "W": [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A], "X": [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        "Y": [0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04], "Z": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        "0": [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E], "1": [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        "2": [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F], "3": [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        "4": [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02], "5": [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        "6": [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E], "7": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        "8": [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E], "9": [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        ".": [0, 0, 0, 0, 0, 0x0C, 0x0C], ",": [0, 0, 0, 0, 0x0C, 0x04, 0x08], "!": [0x04, 0x04, 0x04, 0x04, 0x04, 0, 0x04],
        "?": [0x0E, 0x11, 0x01, 0x02, 0x04, 0, 0x04], "-": [0, 0, 0, 0x1F, 0, 0, 0],
    ]
}

extension VideoFrame {
    /// Scales `other` (any size) into this picture, filling it (libyuv's I420Scale, bilinear):
    /// the last picture carried across a change of the output size.
    public func scalePicture(from other: VideoFrame) {
        if other.width == width && other.height == height {
            copyPicture(from: other)
            return
        }
        let sy = other.plane(0), su = other.plane(1), sv = other.plane(2)
        let dy = plane(0), du = plane(1), dv = plane(2)
        I420Scale(sy.data, sy.stride, su.data, su.stride, sv.data, sv.stride, Int32(other.width), Int32(other.height),
                  dy.data, dy.stride, du.data, du.stride, dv.data, dv.stride, Int32(width), Int32(height), kFilterBilinear)
    }
}
