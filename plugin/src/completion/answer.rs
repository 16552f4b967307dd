//! The answer to a completion before names are looked up: fixed candidates, the names to
//! look up, and cobra's directive.

/// cobra's ShellCompDirective bits.
pub mod directive {
    /// Let the shell complete file names too.
    pub const FILES: u32 = 0;
    /// Do not add a space after the completion (`-o jsonpath=`).
    pub const NO_SPACE: u32 = 2;
    /// Offer no file names.
    pub const NO_FILES: u32 = 4;
}

/// Names read from the cluster or the kubeconfig.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Workspaces in the namespace (`-n`, else the context's).
    Workspaces,
    Recipes,
    Edges,
    Namespaces,
    /// Namespaces labelled as organizations.
    Organizations,
    Contexts,
    Clusters,
    Users,
}

/// The answer before names are looked up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Fixed candidates (`name<TAB>description`), already filtered by the prefix.
    pub candidates: Vec<String>,
    /// Names to look up, then filter by `prefix`.
    pub lookup: Option<Lookup>,
    /// What the word being completed starts with.
    pub prefix: String,
    /// Put before each looked-up name (`--namespace=` when completing `--namespace=or`).
    pub lead: String,
    pub directive: u32,
}

impl Plan {
    pub(super) fn fixed(candidates: Vec<String>, prefix: &str, directive: u32) -> Self {
        Self {
            candidates: candidates
                .into_iter()
                .filter(|c| c.starts_with(prefix))
                .collect(),
            lookup: None,
            prefix: prefix.to_owned(),
            lead: String::new(),
            directive,
        }
    }

    pub(super) fn lookup(lookup: Lookup, prefix: &str, lead: &str) -> Self {
        Self {
            candidates: Vec::new(),
            lookup: Some(lookup),
            prefix: prefix.to_owned(),
            lead: lead.to_owned(),
            directive: directive::NO_FILES,
        }
    }

    /// The lines to print once the looked-up `names` are known.
    pub fn lines(&self, names: &[String]) -> Vec<String> {
        let mut lines = self.candidates.clone();
        lines.extend(
            names
                .iter()
                .filter(|n| n.starts_with(&self.prefix))
                .map(|n| format!("{}{n}", self.lead)),
        );
        lines.push(format!(":{}", self.directive));
        lines
    }
}

/// `name<TAB>description`, the description on one line.
pub(super) fn described(name: &str, description: Option<String>) -> String {
    match description.map(|d| d.replace(['\t', '\n', '\r'], " ")) {
        Some(one_line) if !one_line.is_empty() => format!("{name}\t{one_line}"),
        _ => name.to_owned(),
    }
}
