import Glibc
import LinuxSystem

/// The time code that `x11-paint ... timecode` (tools/testclients/x11-paint.c) draws on the screen,
/// the push benchmark's glass-to-receiver clock: a row of 52 blocks of 32 x 32 px whose top-left
/// corner is (32, 32), white = 1 and black = 0: guard 1 0, the 40 low bits of CLOCK_MONOTONIC in
/// milliseconds (most significant first), CRC-8 (polynomial 0x07, initial 0) of those bits as 5
/// big-endian bytes, guard 0 1. The two files must agree on every one of these numbers.
enum TimeCode {
    static let originX = 32, originY = 32, blockPx = 32, valueBits = 40, crcBits = 8
    static let blockCount = 2 + valueBits + crcBits + 2
    /// The part of the screen a reader needs, from the top-left corner (even, for 4:2:0 crops).
    static let regionWidth = originX + blockCount * blockPx, regionHeight = originY + blockPx
    static let valueMask: UInt64 = (1 << 40) - 1
    /// Mid-grey: a block's mean luma above it reads as 1.
    static let threshold = 128
    /// Half the side of the square averaged at each block's centre (the edges blur in H.264).
    private static let sampleHalfPx = 4

    /// CRC-8, polynomial x^8 + x^2 + x + 1, initial value 0, no reflection, no final xor.
    static func crc8(_ value: UInt64) -> UInt8 {
        var crc: UInt8 = 0
        for shift in stride(from: 32, through: 0, by: -8) {
            crc ^= UInt8(truncatingIfNeeded: value >> UInt64(shift))
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        }
        return crc
    }

    /// The blocks that show `valueMs`, left to right (true = white).
    static func blocks(valueMs: UInt64) -> [Bool] {
        let value = valueMs & valueMask, crc = crc8(value)
        var bits = [true, false]
        bits += (0..<valueBits).map { value >> UInt64(valueBits - 1 - $0) & 1 == 1 }
        bits += (0..<crcBits).map { crc >> UInt8(crcBits - 1 - $0) & 1 == 1 }
        return bits + [false, true]
    }

    /// The value of a row of blocks, or nil when a guard or the CRC does not match.
    static func value(ofBlocks bits: [Bool]) -> UInt64? {
        guard bits.count == blockCount, bits[0], !bits[1], !bits[blockCount - 2], bits[blockCount - 1] else {
            return nil
        }
        let value = bits[2..<2 + valueBits].reduce(UInt64(0)) { $0 << 1 | ($1 ? 1 : 0) }
        let crc = bits[2 + valueBits..<2 + valueBits + crcBits].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) }
        return crc == crc8(value) ? value : nil
    }

    /// Decodes the time code from a grey image (one byte a pixel, `stride` bytes a row, at least
    /// `regionWidth` x `regionHeight`); nil when the image holds no valid code.
    static func decode(grey: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int) -> UInt64? {
        guard width >= regionWidth, height >= regionHeight, stride >= width, grey.count >= stride * height
        else { return nil }
        let centreY = originY + blockPx / 2
        var bits: [Bool] = []
        bits.reserveCapacity(blockCount)
        for block in 0..<blockCount {
            let centreX = originX + block * blockPx + blockPx / 2
            var sum = 0
            for y in centreY - sampleHalfPx..<centreY + sampleHalfPx {
                for x in centreX - sampleHalfPx..<centreX + sampleHalfPx { sum += Int(grey[y * stride + x]) }
            }
            bits.append(sum / (4 * sampleHalfPx * sampleHalfPx) > threshold)
        }
        return value(ofBlocks: bits)
    }

    /// Paints the code for `valueMs` into a grey image (for the self-test).
    static func paint(valueMs: UInt64, into grey: inout [UInt8], stride: Int) {
        for (block, bit) in blocks(valueMs: valueMs).enumerated() {
            for y in originY..<originY + blockPx {
                let row = y * stride + originX + block * blockPx
                for x in row..<row + blockPx { grey[x] = bit ? 255 : 0 }
            }
        }
    }

    /// CLOCK_MONOTONIC now, in nanoseconds.
    static func nowNs() -> UInt64 { MonotonicClock.nowNs() }

    /// Milliseconds from a code (40 bits of CLOCK_MONOTONIC ms) to `receiptNs`, modulo 2^40.
    static func latencyMs(code: UInt64, receiptNs: UInt64) -> Double {
        let receiptMs = receiptNs / 1_000_000, fraction = Double(receiptNs % 1_000_000) / 1_000_000
        var difference = Int64(bitPattern: (receiptMs &- code) & valueMask)
        if difference >= 1 << 39 { difference -= 1 << 40 }
        return Double(difference) + fraction
    }
}
