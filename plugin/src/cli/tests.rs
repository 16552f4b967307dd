use super::*;
use clap::CommandFactory;

#[test]
fn the_command_line_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn every_subcommand_has_examples() {
    for sub in Cli::command().get_subcommands() {
        let help = sub
            .get_after_help()
            .map(|h| h.to_string())
            .unwrap_or_default();
        assert!(
            help.contains("Examples:") && help.contains("kubectl"),
            "{} has no examples",
            sub.get_name()
        );
    }
}

/// `kubectl provider install w --recipe r --edge e DRY_RUN_FLAG`.
fn install_with(dry_run_flag: &str) -> Result<Cli, clap::Error> {
    Cli::try_parse_from([
        "kubectl-provider",
        "install",
        "w",
        "--recipe",
        "r",
        "--edge",
        "e",
        dry_run_flag,
    ])
}

#[test]
fn dry_run_alone_means_server() {
    let cli = install_with("--dry-run").unwrap();
    let Command::Install(args) = cli.command else {
        panic!("install")
    };
    assert_eq!(args.dry_run, DryRun::Server);
}

#[test]
fn client_dry_run_is_refused() {
    let error = install_with("--dry-run=client").unwrap_err();
    assert!(error.to_string().contains("server"), "{error}");
}

#[test]
fn global_flags_go_anywhere() {
    let cli = Cli::try_parse_from([
        "kubectl-provider",
        "status",
        "w",
        "-n",
        "org-a",
        "-o",
        "yaml",
        "--as",
        "alice",
        "--as-group",
        "tenants",
        "--as-group",
        "x",
    ])
    .unwrap();
    assert_eq!(cli.global.namespace.as_deref(), Some("org-a"));
    assert_eq!(cli.global.output, OutputFormat::Yaml);
    assert_eq!(cli.global.as_groups, ["tenants", "x"]);
}

#[test]
fn keys_takes_a_key_id_to_check() {
    let cli = Cli::try_parse_from([
        "kubectl-provider",
        "keys",
        "-A",
        "--in-use",
        "0123456789ABCDEF",
    ])
    .unwrap();
    let Command::Keys(args) = cli.command else {
        panic!("keys")
    };
    assert!(args.all_namespaces);
    assert_eq!(args.in_use.as_deref(), Some("0123456789abcdef"));
    assert_eq!(args.published.keys_configmap, "providers-sealing-keys");
    let error =
        Cli::try_parse_from(["kubectl-provider", "keys", "--in-use", "sealing.pub"]).unwrap_err();
    assert!(
        error.to_string().contains("is not a sealing key ID"),
        "{error}"
    );
}
