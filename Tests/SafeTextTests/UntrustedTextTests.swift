import SafeText
import Testing

/// What `UntrustedText.neutralised` makes of a stranger's text (SPEC §2.3).
@Suite struct UntrustedTextTests {
    /// The two sequences of issue 29: clear the screen, retitle the window.
    static let clearScreen = "\u{1b}[2J"
    static let retitle = "\u{1b}]0;owned\u{07}"

    @Test func terminalEscapesAreShownEscaped() {
        #expect(UntrustedText.neutralised("a" + Self.clearScreen + "b" + Self.retitle) == "a\\x1b[2Jb\\x1b]0;owned\\x07")
    }

    @Test func everyC0DelAndC1CharacterIsEscapedAndNothingElse() {
        let controls = (0..<0x20).map { $0 } + [0x7F] + (0x80...0x9F).map { $0 }
        for value in controls {
            let text = String(Character(Unicode.Scalar(UInt32(value))!))
            let shown = UntrustedText.neutralised("<" + text + ">")
            #expect(shown == "<\\x" + String(format2(value)) + ">", "U+\(String(value, radix: 16))")
            #expect(!UntrustedText.needsNeutralising(shown))
        }
        let kept = "Grüße, 東京, emoji 🎬, a backslash \\ and a tilde ~"
        #expect(UntrustedText.neutralised(kept) == kept)
        #expect(!UntrustedText.needsNeutralising(kept))
    }

    @Test func bidirectionalOverridesAndLineSeparatorsAreEscaped() {
        #expect(UntrustedText.neutralised("abc\u{202E}fed\u{2066}x\u{2028}y") == "abc\\u{202e}fed\\u{2066}x\\u{2028}y")
    }

    @Test func longTextIsCutAndSaysHowMuchWasLeftOut() {
        let text = String(repeating: "x", count: 1000)
        let shown = UntrustedText.neutralised(text, maxScalars: 10)
        #expect(shown == "xxxxxxxxxx…(990 more)")
        #expect(UntrustedText.neutralised(text).unicodeScalars.count <= UntrustedText.defaultMaxScalars + 12)
    }

    @Test func anEscapeIsNeverCutInTheMiddle() {
        let shown = UntrustedText.neutralised("abcd\u{1b}[2J", maxScalars: 6)
        #expect(shown == "abcd…(4 more)")
    }

    @Test func aSecondPassChangesNothing() {
        let once = UntrustedText.neutralised("x" + Self.retitle + "\u{9b}31m\u{202E}")
        #expect(UntrustedText.neutralised(once) == once)
    }

    private func format2(_ value: Int) -> String {
        let text = String(value, radix: 16)
        return text.count < 2 ? "0" + text : text
    }
}
