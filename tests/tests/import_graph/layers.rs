//! The installer's layers (`webhook/src/controller/LAYERS`): every file of the controller
//! lives in one layer's folder, and no file names a file of a layer above its own. The
//! order is written once, in that file; the controller's `mod.rs`, which only declares the
//! layers and re-exports for the process's command, is in none.

use std::{
    fs,
    path::{Path, PathBuf},
};

use super::imports::Edge;

/// Where the layers are, and the file that orders them.
pub const CONTROLLER: &str = "webhook/src/controller";
pub const LAYERS: &str = "webhook/src/controller/LAYERS";

/// The layers, top first, from the LAYERS file (a name a line; `#` starts a comment).
pub fn read(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The layer of a file under `controller` (its first folder there), `None` for a file
/// outside it or the controller's own `mod.rs`.
fn layer_of<'a>(controller: &Path, file: &'a Path) -> Option<&'a str> {
    let rest = file.strip_prefix(controller).ok()?;
    let mut parts = rest.components();
    let first = parts.next()?.as_os_str().to_str()?;
    parts.next().map(|_| first)
}

/// Every edge that goes up a layer, as `from (layer) -> to (layer)`; and every file of the
/// controller in no listed layer.
pub fn violations(
    controller: &Path,
    layers: &[String],
    files: &[PathBuf],
    edges: &[Edge],
) -> Vec<String> {
    let rank = |layer: &str| layers.iter().position(|l| l == layer);
    let mut found = Vec::new();
    for file in files {
        if let Some(layer) = layer_of(controller, file)
            && rank(layer).is_none()
        {
            found.push(format!(
                "{} is in the folder {layer}, which {LAYERS} does not list: move it into a layer or list the folder",
                file.display()
            ));
        }
    }
    for (from, to) in edges {
        let (Some(upper), Some(lower)) = (layer_of(controller, from), layer_of(controller, to))
        else {
            continue;
        };
        if let (Some(a), Some(b)) = (rank(upper), rank(lower))
            && b < a
        {
            found.push(format!(
                "{} ({upper}) names {} ({lower}), a layer above it: move what both need down, or pass it in from above",
                from.display(),
                to.display()
            ));
        }
    }
    found
}

/// The controller's source files, relative to the workspace.
pub fn files(workspace: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![PathBuf::from(CONTROLLER)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(workspace.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = dir.join(entry.file_name());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod rules {
    use super::*;

    fn edge(from: &str, to: &str) -> Edge {
        (PathBuf::from(from), PathBuf::from(to))
    }

    #[test]
    fn an_upward_name_and_a_file_outside_the_layers_are_reported() {
        let layers = read("# top first\nprocess\nreconcile # the pass\nsupport\n");
        assert_eq!(layers, ["process", "reconcile", "support"]);
        let controller = Path::new("c");
        let files = [
            PathBuf::from("c/mod.rs"),
            PathBuf::from("c/process/term.rs"),
            PathBuf::from("c/stray/thing.rs"),
        ];
        let found = violations(
            controller,
            &layers,
            &files,
            &[
                edge("c/process/term.rs", "c/reconcile/pass.rs"),
                edge("c/reconcile/pass.rs", "c/reconcile/observe.rs"),
                edge("c/mod.rs", "c/process/term.rs"),
                edge("c/support/metrics.rs", "c/reconcile/pass.rs"),
                edge("c/support/metrics.rs", "elsewhere/lib.rs"),
            ],
        );
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains("c/stray/thing.rs") && found[0].contains("stray"));
        assert!(
            found[1]
                .contains("c/support/metrics.rs (support) names c/reconcile/pass.rs (reconcile)"),
            "{}",
            found[1]
        );
    }
}
