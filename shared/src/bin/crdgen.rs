//! Writes the CRDs rendered from the API types into a folder (default `manifests/crds`),
//! the values-bounds policy beside it (`../policies`), and the API reference into `docs/api-reference.md` (or the second argument).
use std::{env, fs, path::PathBuf, process::ExitCode};

fn main() -> ExitCode {
    let dir = PathBuf::from(
        env::args()
            .nth(1)
            .unwrap_or_else(|| "manifests/crds".to_owned()),
    );
    if let Err(error) = fs::create_dir_all(&dir) {
        eprintln!("crdgen: cannot create {}: {error}", dir.display());
        return ExitCode::FAILURE;
    }
    for (file, crd) in providers::crd::all() {
        let path = dir.join(file);
        let written = providers::crd::render(&crd)
            .map_err(|e| e.to_string())
            .and_then(|yaml| fs::write(&path, yaml).map_err(|e| e.to_string()));
        if let Err(error) = written {
            eprintln!("crdgen: {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    let policies = dir.join("../policies");
    let policy = policies.join(providers::policy::VALUES_BOUNDS_FILE);
    let written = fs::create_dir_all(&policies)
        .and_then(|()| fs::write(&policy, providers::policy::values_bounds()));
    if let Err(error) = written {
        eprintln!("crdgen: {}: {error}", policy.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {}", policy.display());
    let reference = PathBuf::from(
        env::args()
            .nth(2)
            .unwrap_or_else(|| "docs/api-reference.md".to_owned()),
    );
    if let Err(error) = fs::write(
        &reference,
        providers::reference::markdown(&providers::crd::all()),
    ) {
        eprintln!("crdgen: {}: {error}", reference.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {}", reference.display());
    ExitCode::SUCCESS
}
