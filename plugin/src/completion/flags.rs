//! The flags among the typed words: which flag a word names, whether it takes a value,
//! the ones that choose the cluster, and the flags to offer.

use clap::{Arg, Command};

use super::answer::described;
use crate::{cli::GlobalFlags, duration::parse_duration};

/// The flag a word names (`--output`, `--output=json`, `-o`, `-ojson`), with its inline
/// value if any.
pub fn flag_of<'a>(command: &'a Command, word: &str) -> Option<(&'a Arg, Option<String>)> {
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

pub fn takes_value(arg: &Arg) -> bool {
    !arg.is_positional() && arg.get_action().takes_values()
}

pub fn value_is_optional(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.min_values() == 0)
}

/// Keeps the flags that choose where names are looked up.
pub fn remember(flags: &mut GlobalFlags, arg: &Arg, value: String) {
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

/// Every flag of `command` (its own and the global ones) starting with `prefix`.
pub fn flag_candidates(command: &Command, prefix: &str) -> Vec<String> {
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
