/// The version every LivePush executable reports with `--version`.
public enum LivePushVersion {
    public static let current = "0.1.0"
}
