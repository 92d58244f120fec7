import SafeText
import Testing

/// A destination's name when it has no label: 6 hex digits of SHA-256 of its key (issue 35 item 5).
@Suite struct KeyFingerprintTests {
    @Test func theFingerprintIsTheStartOfSHA256OfTheKey() {
        // FIPS 180-4's examples and the empty string: SHA-256 "abc" = ba7816bf..., "" = e3b0c442...,
        // the 56-byte two-block message = 248d6a61...
        #expect(KeyFingerprint.of("abc") == "ba7816")
        #expect(KeyFingerprint.of("") == "e3b0c4")
        #expect(KeyFingerprint.of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") == "248d6a")
        #expect(KeyFingerprint.of(String(repeating: "a", count: 1000)) == "41edec")
    }

    @Test func twoKeysDifferAndTheKeyIsNotInItsFingerprint() {
        let one = KeyFingerprint.of("live_12345_abcdef"), two = KeyFingerprint.of("live_12345_abcdeg")
        #expect(one != two && one.count == 6 && two.count == 6)
        #expect(one.allSatisfy { "0123456789abcdef".contains($0) })
    }
}
