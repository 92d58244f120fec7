import Foundation

/// One JSON object per line (JSON Lines): the control socket's requests and answers and the
/// event stream. Keys are sorted so that lines are stable to read and to diff.
public enum JSONLine {
    /// `object` as one line of JSON, without the newline.
    public static func encode(_ object: [String: Any]) -> String {
        guard JSONSerialization.isValidJSONObject(object),
              let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]),
              let text = String(data: data, encoding: .utf8)
        else {
            return "{\"type\":\"error\",\"message\":\"internal: a value could not be written as JSON\"}"
        }
        return text
    }

    /// The object on `line`, or nil when it is not a JSON object.
    public static func decode(_ line: String) -> [String: Any]? {
        guard let data = line.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object
    }
}
