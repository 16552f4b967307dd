//! The sealing key and the public keys accepted for verification.

use std::path::Path;

use anyhow::Context;
use providers_shared::seal::{Keyring, Sealer};

/// Loads the webhook's private sealing key.
pub fn load_sealer(path: &Path) -> anyhow::Result<Sealer> {
    let pem = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the sealing key {}", path.display()))?;
    Sealer::from_pkcs8_pem(&pem)
        .with_context(|| format!("cannot use the sealing key {}", path.display()))
}

/// The public keys the validating webhook accepts: every `*.pem` file in `dir` (the
/// published keys ConfigMap, mounted), plus the sealer's own key.
pub fn load_keyring(sealer: &Sealer, dir: Option<&Path>) -> anyhow::Result<Keyring> {
    let mut pems = vec![(format!("{}.pem", sealer.key_id()), sealer.public_key_pem())];
    if let Some(dir) = dir {
        for entry in
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?
        {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "pem") && path.is_file() {
                let pem = std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                pems.push((path.display().to_string(), pem));
            }
        }
    }
    Ok(Keyring::from_pems(
        pems.iter().map(|(n, p)| (n.as_str(), p.as_str())),
    )?)
}
