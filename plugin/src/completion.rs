//! Shell completion through kubectl (1.26+): kubectl runs `kubectl_complete-provider` with
//! the words typed after `kubectl provider`, the last one being completed (maybe empty), and
//! prints what it answers: one candidate a line (`candidate<TAB>description`), then
//! `:<directive>`, as cobra's `__complete` protocol has it.
//!
//! This module decides what the last word is (a subcommand, a flag, a flag's value, a name)
//! from the command line's own definition; names from the cluster are looked up by
//! `commands::complete`.

use std::time::Duration;

use clap::{Arg, Command, CommandFactory};

use crate::{
    cli::{Cli, GlobalFlags},
    duration::parse_duration,
};

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
    fn fixed(candidates: Vec<String>, prefix: &str, directive: u32) -> Self {
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

    fn lookup(lookup: Lookup, prefix: &str, lead: &str) -> Self {
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

/// What the words typed so far ask to complete, and the kubectl flags among them (to look
/// names up where the command would act).
pub fn plan(words: &[String]) -> (Plan, GlobalFlags) {
    let mut root = Cli::command();
    root.build();
    let (typed, current) = match words.split_last() {
        Some((last, before)) => (before, last.as_str()),
        None => (&[][..], ""),
    };
    let mut command = &root;
    let mut flags = GlobalFlags::default();
    let mut positionals = 0usize;
    let mut i = 0;
    while i < typed.len() {
        let word = typed[i].as_str();
        i += 1;
        let Some((arg, inline)) = flag_of(command, word) else {
            match command.find_subcommand(word) {
                Some(sub) if positionals == 0 => command = sub,
                _ => positionals += 1,
            }
            continue;
        };
        if !takes_value(arg) {
            continue;
        }
        let value = match inline {
            Some(value) => value,
            // `--dry-run` alone: its value can only be given inline.
            None if value_is_optional(arg) => continue,
            None if i < typed.len() => {
                i += 1;
                typed[i - 1].clone()
            }
            // The flag is the last typed word: its value is what is being completed.
            None => return (value_plan(arg, current, ""), flags),
        };
        remember(&mut flags, arg, value);
    }
    if let Some(rest) = current.strip_prefix("--")
        && let Some((name, value)) = rest.split_once('=')
    {
        let plan = match command.get_arguments().find(|a| a.get_long() == Some(name)) {
            Some(arg) => value_plan(arg, value, &format!("--{name}=")),
            None => Plan::fixed(Vec::new(), value, directive::NO_FILES),
        };
        return (plan, flags);
    }
    let plan = if current.starts_with('-') {
        Plan::fixed(
            flag_candidates(command, current),
            current,
            directive::NO_FILES,
        )
    } else if command.has_subcommands() && positionals == 0 {
        let subcommands = command
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| described(s.get_name(), s.get_about().map(|a| a.to_string())))
            .collect();
        Plan::fixed(subcommands, current, directive::NO_FILES)
    } else {
        positional_plan(command, positionals, current)
    };
    (plan, flags)
}

/// The flag a word names (`--output`, `--output=json`, `-o`, `-ojson`), with its inline
/// value if any.
fn flag_of<'a>(command: &'a Command, word: &str) -> Option<(&'a Arg, Option<String>)> {
    if let Some(rest) = word.strip_prefix("--") {
        let (name, inline) = match rest.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (rest, None),
        };
        return command
            .get_arguments()
            .find(|a| a.get_long() == Some(name))
            .map(|arg| (arg, inline));
    }
    let rest = word.strip_prefix('-')?;
    let short = rest.chars().next()?;
    let arg = command
        .get_arguments()
        .find(|a| a.get_short() == Some(short))?;
    let inline = &rest[short.len_utf8()..];
    let inline = inline.strip_prefix('=').unwrap_or(inline);
    Some((arg, (!inline.is_empty()).then(|| inline.to_owned())))
}

fn takes_value(arg: &Arg) -> bool {
    !arg.is_positional() && arg.get_action().takes_values()
}

fn value_is_optional(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.min_values() == 0)
}

/// Keeps the flags that choose where names are looked up.
fn remember(flags: &mut GlobalFlags, arg: &Arg, value: String) {
    match arg.get_id().as_str() {
        "kubeconfig" => flags.kubeconfig = Some(value.into()),
        "context" => flags.context = Some(value),
        "cluster" => flags.cluster = Some(value),
        "user" => flags.user = Some(value),
        "namespace" => flags.namespace = Some(value),
        "as_user" => flags.as_user = Some(value),
        "as_groups" => flags.as_groups.push(value),
        "request_timeout" => flags.request_timeout = parse_duration(&value).ok(),
        _ => {}
    }
}

/// Candidates for the value of `arg`; `lead` goes before each (`--flag=`).
fn value_plan(arg: &Arg, prefix: &str, lead: &str) -> Plan {
    let lookup = |what| Plan::lookup(what, prefix, lead);
    match arg.get_id().as_str() {
        "namespace" => return lookup(Lookup::Namespaces),
        "context" => return lookup(Lookup::Contexts),
        "cluster" => return lookup(Lookup::Clusters),
        "user" => return lookup(Lookup::Users),
        "recipe" => return lookup(Lookup::Recipes),
        "edge" => return lookup(Lookup::Edges),
        "kubeconfig" | "files" => return Plan::fixed(Vec::new(), prefix, directive::FILES),
        "output" => {
            let formats = [
                "table",
                "wide",
                "yaml",
                "json",
                "name",
                "jsonpath=",
                "custom-columns=",
            ];
            let mut plan = Plan::fixed(
                formats.iter().map(|f| format!("{lead}{f}")).collect(),
                &format!("{lead}{prefix}"),
                directive::NO_FILES,
            );
            if plan.candidates.iter().any(|c| c.ends_with('=')) {
                plan.directive |= directive::NO_SPACE;
            }
            return plan;
        }
        _ => {}
    }
    let values = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("{lead}{}", v.get_name()))
        .collect();
    Plan::fixed(values, &format!("{lead}{prefix}"), directive::NO_FILES)
}

/// Candidates for the `index`th positional argument of `command`.
fn positional_plan(command: &Command, index: usize, prefix: &str) -> Plan {
    let Some(arg) = command.get_positionals().nth(index) else {
        return Plan::fixed(Vec::new(), prefix, directive::NO_FILES);
    };
    if arg.get_id() == "name" {
        let what = match command.get_name() {
            "recipes" => Some(Lookup::Recipes),
            "edges" => Some(Lookup::Edges),
            "remove" => Some(Lookup::Organizations),
            // A new Workspace's name, or a new organization's: nothing to offer.
            "install" | "add" => None,
            _ => Some(Lookup::Workspaces),
        };
        return match what {
            Some(what) => Plan::lookup(what, prefix, ""),
            None => Plan::fixed(Vec::new(), prefix, directive::NO_FILES),
        };
    }
    value_plan(arg, prefix, "")
}

/// Every flag of `command` (its own and the global ones) starting with `prefix`.
fn flag_candidates(command: &Command, prefix: &str) -> Vec<String> {
    let mut flags = Vec::new();
    for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
        let help = arg.get_help().map(|h| first_sentence(&h.to_string()));
        if let Some(long) = arg.get_long() {
            flags.push(described(&format!("--{long}"), help.clone()));
        }
        // Short forms only when the user typed a lone dash.
        if prefix == "-"
            && let Some(short) = arg.get_short()
        {
            flags.push(described(&format!("-{short}"), help));
        }
    }
    for (long, help) in [("--help", "Print help")] {
        if !flags.iter().any(|f| f.starts_with(&format!("{long}\t"))) {
            flags.push(described(long, Some(help.to_owned())));
        }
    }
    flags
}

fn first_sentence(help: &str) -> String {
    let line = help.lines().next().unwrap_or_default();
    match line.split_once(". ") {
        Some((first, _)) => first.to_owned(),
        None => line.trim_end_matches('.').to_owned(),
    }
}

/// `name<TAB>description`, the description on one line.
fn described(name: &str, description: Option<String>) -> String {
    match description.map(|d| d.replace(['\t', '\n', '\r'], " ")) {
        Some(d) if !d.is_empty() => format!("{name}\t{d}"),
        _ => name.to_owned(),
    }
}

/// How long a completion waits for the API server when the words set no
/// `--request-timeout`: a shell waiting on Tab should not hang.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(line: &str) -> Plan {
        let mut words: Vec<String> = line.split(' ').map(str::to_owned).collect();
        if line.is_empty() {
            words = vec![String::new()];
        }
        plan(&words).0
    }

    fn names(plan: &Plan) -> Vec<&str> {
        plan.candidates
            .iter()
            .map(|c| c.split('\t').next().unwrap_or_default())
            .collect()
    }

    #[test]
    fn subcommands_complete_with_their_descriptions() {
        let plan = complete("st");
        assert_eq!(names(&plan), ["status"]);
        assert!(plan.candidates[0].starts_with("status\tShow a Workspace"));
        assert_eq!(plan.directive, directive::NO_FILES);
        let all = complete("");
        assert!(names(&all).contains(&"recipes") && names(&all).contains(&"org"));
        assert_eq!(names(&complete("org r")), ["remove"]);
    }

    #[test]
    fn flags_complete_for_the_subcommand_with_the_global_ones() {
        let plan = complete("status --w");
        assert_eq!(names(&plan), ["--watch", "--wait"]);
        let global = names(&complete("edges --cl")).join(" ");
        assert_eq!(global, "--cluster");
        assert!(names(&complete("status -")).contains(&"-w"));
        assert!(names(&complete("-")).contains(&"--kubeconfig"));
    }

    #[test]
    fn flag_values_complete_from_their_kind() {
        assert_eq!(complete("status -o j").candidates, ["json", "jsonpath="]);
        assert_eq!(
            complete("status -o j").directive,
            directive::NO_FILES | directive::NO_SPACE
        );
        assert_eq!(complete("status --output=ya").candidates, ["--output=yaml"]);
        assert_eq!(complete("install w --dry-run=").candidates.len(), 2);
        assert_eq!(complete("completion f").candidates, ["fish"]);
        let ns = complete("status -n or");
        assert_eq!(
            (ns.lookup, ns.prefix.as_str()),
            (Some(Lookup::Namespaces), "or")
        );
        let edge = complete("install web --recipe podinfo --edge e");
        assert_eq!(edge.lookup, Some(Lookup::Edges));
        assert_eq!(
            complete("install web --recipe ").lookup,
            Some(Lookup::Recipes)
        );
        assert_eq!(complete("--context ").lookup, Some(Lookup::Contexts));
        assert_eq!(complete("status --user ").lookup, Some(Lookup::Users));
        assert_eq!(complete("install w -f ").directive, directive::FILES);
        // --dry-run's value is optional: the next word is not it.
        assert_eq!(
            complete("install w --dry-run --edge ").lookup,
            Some(Lookup::Edges)
        );
        let lead = complete("status --namespace=or");
        assert_eq!(
            lead.lines(&["org-a".into(), "x".into()]),
            ["--namespace=org-a", ":4"]
        );
    }

    #[test]
    fn names_complete_by_what_the_subcommand_takes() {
        for (line, lookup) in [
            ("status ", Some(Lookup::Workspaces)),
            ("retry w", Some(Lookup::Workspaces)),
            ("-n org-a plan ", Some(Lookup::Workspaces)),
            ("recipes ", Some(Lookup::Recipes)),
            ("edges -o wide ", Some(Lookup::Edges)),
            ("org remove ", Some(Lookup::Organizations)),
            ("install ", None),
            ("status web ", None),
        ] {
            assert_eq!(complete(line).lookup, lookup, "{line:?}");
        }
    }

    #[test]
    fn the_flags_that_choose_the_cluster_are_kept() {
        let words: Vec<String> = [
            "--kubeconfig",
            "/k",
            "-norg-a",
            "--context=c",
            "--user",
            "u",
            "--request-timeout",
            "2s",
            "status",
            "",
        ]
        .map(str::to_owned)
        .to_vec();
        let (plan, flags) = plan(&words);
        assert_eq!(plan.lookup, Some(Lookup::Workspaces));
        assert_eq!(
            flags.kubeconfig.as_deref(),
            Some(std::path::Path::new("/k"))
        );
        assert_eq!(flags.namespace.as_deref(), Some("org-a"));
        assert_eq!(flags.context.as_deref(), Some("c"));
        assert_eq!(flags.user.as_deref(), Some("u"));
        assert_eq!(flags.request_timeout, Some(Duration::from_secs(2)));
    }

    #[test]
    fn odd_words_never_panic() {
        for line in [
            "",
            "-",
            "--",
            "--=",
            "-\u{e9}",
            "status --output=",
            "org add x --tenant-user ",
            "zzz zzz zzz",
            "status -o",
        ] {
            let plan = complete(line);
            assert!(plan.lines(&[]).last().is_some_and(|l| l.starts_with(':')));
        }
        assert_eq!(
            plan(&[]).0.lines(&[]).last().map(String::as_str),
            Some(":4")
        );
    }
}
