//! The installer's layers (`webhook/installer/src/LAYERS`): every file of the controller
//! (the crate `providers-installer`) lives in one layer's folder, and no file names a file
//! of a layer above its own. The order is written once, in that file. The crate's root,
//! `lib.rs`, which only declares the layers and re-exports for the process's command,
//! stands above them all: a layer that named it (a glob of its re-exports, say) would
//! reach what it re-exports from above.

use std::path::{Path, PathBuf};

use super::imports::Edge;

/// Where the layers are, and the file that orders them.
pub const CONTROLLER: &str = "webhook/installer/src";
pub const LAYERS: &str = "webhook/installer/src/LAYERS";

/// The layers, top first, from the LAYERS file (a name a line; `#` starts a comment).
pub fn read(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Where a file stands among the layers.
#[derive(Debug, PartialEq)]
enum Place<'a> {
    /// Outside the controller.
    Outside,
    /// The controller's root, `lib.rs`, above every layer.
    Facade,
    /// Directly in the controller's folder, in no layer.
    Loose,
    /// In this layer's folder.
    Layer(&'a str),
}

fn place_of<'a>(controller: &Path, file: &'a Path) -> Place<'a> {
    let Ok(rest) = file.strip_prefix(controller) else {
        return Place::Outside;
    };
    let mut parts = rest.components();
    let Some(first) = parts.next().and_then(|part| part.as_os_str().to_str()) else {
        return Place::Outside;
    };
    match (parts.next(), first) {
        (Some(_), layer) => Place::Layer(layer),
        (None, "lib.rs") => Place::Facade,
        (None, _) => Place::Loose,
    }
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
        match place_of(controller, file) {
            Place::Layer(layer) if rank(layer).is_none() => found.push(format!(
                "{} is in the folder {layer}, which {LAYERS} does not list: move it into a layer or list the folder",
                file.display()
            )),
            Place::Loose => found.push(format!(
                "{} is in no layer: move it into the folder of the layer it belongs to",
                file.display()
            )),
            _ => {}
        }
    }
    for (from, to) in edges {
        let Place::Layer(upper) = place_of(controller, from) else {
            continue;
        };
        let lower = match place_of(controller, to) {
            Place::Layer(lower) => lower,
            Place::Facade => {
                found.push(format!(
                    "{} ({upper}) names {}, the controller's facade above every layer: name the file of the layer that defines what it needs",
                    from.display(),
                    to.display()
                ));
                continue;
            }
            Place::Outside | Place::Loose => continue,
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
    providers_tests::binaries::rust_files(&workspace.join(CONTROLLER))
        .into_iter()
        .filter_map(|file| file.strip_prefix(workspace).ok().map(Path::to_path_buf))
        .collect()
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
            PathBuf::from("c/lib.rs"),
            PathBuf::from("c/loose.rs"),
            PathBuf::from("c/process/replica.rs"),
            PathBuf::from("c/stray/thing.rs"),
        ];
        let found = violations(
            controller,
            &layers,
            &files,
            &[
                edge("c/process/replica.rs", "c/reconcile/pass.rs"),
                edge("c/reconcile/pass.rs", "c/reconcile/observe.rs"),
                edge("c/lib.rs", "c/process/replica.rs"),
                edge("c/support/metrics.rs", "c/reconcile/pass.rs"),
                edge("c/support/metrics.rs", "elsewhere/lib.rs"),
                edge("c/support/task.rs", "c/lib.rs"),
            ],
        );
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(
            found[0].contains("c/loose.rs is in no layer"),
            "{}",
            found[0]
        );
        assert!(found[1].contains("c/stray/thing.rs") && found[1].contains("stray"));
        assert!(
            found[2]
                .contains("c/support/metrics.rs (support) names c/reconcile/pass.rs (reconcile)"),
            "{}",
            found[2]
        );
        assert!(
            found[3]
                .contains("c/support/task.rs (support) names c/lib.rs, the controller's facade"),
            "{}",
            found[3]
        );
    }
}
