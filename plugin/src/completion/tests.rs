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
    assert_eq!(names(&complete("ke")), ["keys"]);
    assert_eq!(names(&complete("keys --in")), ["--in-use"]);
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
