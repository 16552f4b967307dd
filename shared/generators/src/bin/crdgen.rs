//! Writes the CRDs rendered from the API types into a folder (default `manifests/crds`, and
//! then also the Helm chart's `charts/providers/crds`), the values-bounds policy beside it
//! (`../policies`, and then also `charts/providers/files`), and the API reference into `docs/api-reference.md` (or the second
//! argument).
use std::{env, fs, path::PathBuf, process::ExitCode};

/// The Helm chart's CRD folder and the folder its templates read the values-bounds policy
/// from, written too when crdgen runs with its defaults.
const CHART_CRDS: &str = "charts/providers/crds";
const CHART_FILES: &str = "charts/providers/files";

fn write_crds(dir: &std::path::Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (file, crd) in providers_generators::crd::all() {
        let path = dir.join(file);
        providers_generators::crd::render(&crd)
            .map_err(|e| e.to_string())
            .and_then(|yaml| fs::write(&path, yaml).map_err(|e| e.to_string()))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let dir = PathBuf::from(
        env::args()
            .nth(1)
            .unwrap_or_else(|| "manifests/crds".to_owned()),
    );
    let mut folders = vec![dir.clone()];
    if env::args().nth(1).is_none() {
        folders.push(PathBuf::from(CHART_CRDS));
    }
    for folder in &folders {
        if let Err(error) = write_crds(folder) {
            eprintln!("crdgen: {error}");
            return ExitCode::FAILURE;
        }
    }
    let mut policy_folders = vec![dir.join("../policies")];
    if env::args().nth(1).is_none() {
        policy_folders.push(PathBuf::from(CHART_FILES));
    }
    for policies in policy_folders {
        let policy = policies.join(providers_generators::policy::VALUES_BOUNDS_FILE);
        let written = fs::create_dir_all(&policies)
            .and_then(|()| fs::write(&policy, providers_generators::policy::values_bounds()));
        if let Err(error) = written {
            eprintln!("crdgen: {}: {error}", policy.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", policy.display());
    }
    let reference = PathBuf::from(
        env::args()
            .nth(2)
            .unwrap_or_else(|| "docs/api-reference.md".to_owned()),
    );
    if let Err(error) = fs::write(
        &reference,
        providers_generators::reference::markdown(&providers_generators::crd::all()),
    ) {
        eprintln!("crdgen: {}: {error}", reference.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {}", reference.display());
    ExitCode::SUCCESS
}
