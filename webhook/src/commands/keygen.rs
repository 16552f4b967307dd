//! `providers-webhook keygen`: a new sealing key pair.

use std::{fs::OpenOptions, io::Write, os::unix::fs::OpenOptionsExt};

use anyhow::Context;
use providers_shared::seal::Sealer;

use crate::cli::KeygenArgs;

pub fn run(args: &KeygenArgs) -> anyhow::Result<()> {
    let sealer = Sealer::generate()?;
    let mut private = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&args.private_key)
        .with_context(|| {
            format!(
                "cannot create {} (it must not exist yet)",
                args.private_key.display()
            )
        })?;
    private.write_all(sealer.to_pkcs8_pem()?.as_bytes())?;
    std::fs::write(&args.public_key, sealer.public_key_pem())
        .with_context(|| format!("cannot write {}", args.public_key.display()))?;
    println!("{}", sealer.key_id());
    Ok(())
}
