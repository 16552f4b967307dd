//! Shell completion through kubectl (1.26+): kubectl runs `kubectl_complete-provider` with
//! the words typed after `kubectl provider`, the last one being completed (maybe empty), and
//! prints what it answers: one candidate a line (`candidate<TAB>description`), then
//! `:<directive>`, as cobra's `__complete` protocol has it.
//!
//! This module decides what the last word is (a subcommand, a flag, a flag's value, a name)
//! from the command line's own definition; names from the cluster are looked up by
//! `commands::complete`.

mod answer;
mod flags;
#[cfg(test)]
mod tests;
mod value_candidates;

use std::time::Duration;

use clap::CommandFactory;

use self::{
    answer::described,
    flags::{flag_candidates, flag_of, remember, takes_value, value_is_optional},
    value_candidates::{positional_plan, value_plan},
};
use crate::cli::{Cli, GlobalFlags};

pub use answer::{Lookup, Plan, directive};

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
    let mut next = 0;
    while next < typed.len() {
        let word = typed[next].as_str();
        next += 1;
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
            None if next < typed.len() => {
                next += 1;
                typed[next - 1].clone()
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

/// How long a completion waits for the API server when the words set no
/// `--request-timeout`: a shell waiting on Tab should not hang.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);
