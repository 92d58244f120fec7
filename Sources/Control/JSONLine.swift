import Foundation

/// One JSON object per line (JSON Lines): the control socket's requests and answers and the
/// event stream. Keys are sorted so that lines are stable to read and to diff. Written by hand
/// (Foundation's JSONSerialization costs about a millisecond per statistics line here).
public enum JSONLine {
    /// `object` as one line of JSON, without the newline. Values: String, Bool, integers,
    /// Double, NSNumber, NSNull, arrays and [String: Any] of them; anything else is written as null.
    public static func encode(_ object: [String: Any]) -> String {
        var out = ""
        out.reserveCapacity(256)
        write(object, into: &out)
        return out
    }

    private static func write(_ value: Any, into out: inout String) {
        switch value {
        case let text as String: writeString(text, into: &out)
        case let flag as Bool: out += flag ? "true" : "false"
        case let number as Int: out += String(number)
        case let number as Int32: out += String(number)
        case let number as Int64: out += String(number)
        case let number as UInt64: out += String(number)
        case let number as UInt16: out += String(number)
        case let number as Double: out += number.isFinite ? String(number) : "null"
        case let number as NSNumber: out += number.stringValue
        case let object as [String: Any]:
            out += "{"
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                writeString(key, into: &out)
                out += ":"
                write(object[key]!, into: &out)
            }
            out += "}"
        case let array as [Any]:
            out += "["
            for (index, element) in array.enumerated() {
                if index > 0 { out += "," }
                write(element, into: &out)
            }
            out += "]"
        default: out += "null"
        }
    }

    private static func writeString(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let control where control.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(control.value, radix: 16).count)
                    + String(control.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// The object on `line`, or nil when it is not a JSON object.
    public static func decode(_ line: String) -> [String: Any]? {
        guard let data = line.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object
    }
}
