//! Objects named in the plugin's sentences: the ` -n NAMESPACE` of the commands it suggests
//! (`namespace/name` is `providers_shared::text::object_key`).

/// ` -n NAMESPACE` to put in a suggested command when the user gave `-n`, so that it can be
/// pasted as it is; nothing otherwise.
pub fn namespace_suffix(namespace_flag: Option<&str>) -> String {
    namespace_flag
        .map(|namespace| format!(" -n {namespace}"))
        .unwrap_or_default()
}
