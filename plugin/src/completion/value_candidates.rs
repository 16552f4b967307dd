//! Candidates for a flag's value or a positional argument, from what the command line
//! declares it to be.

use clap::{Arg, Command};

use super::answer::{Lookup, Plan, directive};

/// Candidates for the value of `arg`; `lead` goes before each (`--flag=`).
pub fn value_plan(arg: &Arg, prefix: &str, lead: &str) -> Plan {
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
pub fn positional_plan(command: &Command, index: usize, prefix: &str) -> Plan {
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
