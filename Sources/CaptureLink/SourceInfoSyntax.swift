import FoundationEssentials

/// START's setup info is one JSON object (SPEC §5); PusherSession refuses anything else with TEXT.
enum SourceInfoSyntax {
    /// Whether `text` is one JSON object, read to its last character. The corresponding Foundation call
    /// was `JSONSerialization.jsonObject(with:)`, which FoundationEssentials lacks (issue 36: CaptureLink
    /// imports no Foundation, so that the helper links no ICU); this refuses what it refused.
    static func isJSONObject(_ text: String) -> Bool {
        (try? JSONDecoder().decode(JSONObjectShape.self, from: Data(text.utf8))) != nil
    }
}

/// Any JSON object, every value in it read: FoundationEssentials has JSONDecoder but not JSONSerialization
/// (issue 36), and JSONDecoder checks a string's characters only when the string is decoded (a raw ESC
/// inside a value is refused only then). Decoding every value refuses what JSONSerialization refused.
private struct JSONObjectShape: Decodable {
    init(from decoder: any Decoder) throws {
        let object = try decoder.container(keyedBy: JSONKey.self)
        for key in object.allKeys { _ = try object.decode(JSONValueShape.self, forKey: key) }
    }
}

/// Any JSON value, read to its last character: an object, an array, null, a boolean, a number or a string.
private struct JSONValueShape: Decodable {
    init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: JSONKey.self) {
            for key in object.allKeys { _ = try object.decode(JSONValueShape.self, forKey: key) }
        } else if var array = try? decoder.unkeyedContainer() {
            while !array.isAtEnd { _ = try array.decode(JSONValueShape.self) }
        } else {
            let value = try decoder.singleValueContainer()
            if value.decodeNil() || (try? value.decode(Bool.self)) != nil || (try? value.decode(Double.self)) != nil { return }
            _ = try value.decode(String.self)
        }
    }
}

private struct JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
