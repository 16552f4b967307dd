//! `kubectl provider` through the real kubectl against a real kube-apiserver, as a tenant
//! (alice) and as the platform admin, in table, wide, yaml, json and name output.
//!
//! No webhook runs here: plans are sealed by the test with a key whose public half is
//! published in the keys ConfigMap, and status is written through the status
//! subresource, as the webhook and the installer would. What needs the real webhook
//! (its denials, its sealing) is in plugin_webhook.rs.

use std::{path::Path, process::Stdio, sync::OnceLock, time::Duration};

use anyhow::Context;
use providers_shared::seal::Sealer;
use providers_tests::{
    ControlPlaneInfo, User, kubectl,
    plugin::{
        self,
        fixture::{
            SHOWCASE, assert_one_error_line, failed, get, install_catalog, running, seal,
            succeeded, wait_for, write_plan, write_status,
        },
    },
    supervised,
    webhook::publish_keys,
};
use serde_json::{Value, json};

/// The seed of the key whose public half is published.
const PUBLISHED: [u8; 32] = [42; 32];
/// A key nobody published.
const UNKNOWN: [u8; 32] = [7; 32];

fn plane() -> &'static ControlPlaneInfo {
    static FIXTURE: OnceLock<&'static ControlPlaneInfo> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
        set_up(plane).expect("the plugin's fixture is set up");
        plane
    })
}

fn set_up(plane: &'static ControlPlaneInfo) -> anyhow::Result<()> {
    install_catalog(plane)?;
    let sealer = Sealer::from_seed(PUBLISHED);
    publish_keys(plane, sealer.key_id(), &sealer.public_key_pem())?;

    // The showcase: `shown` failed once, was retried and succeeded; `fresh` is not sealed.
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &[
            "install",
            "shown",
            "-n",
            SHOWCASE,
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--set",
            "replicaCount=2,ui.message=hello",
        ],
    )?
    .ok()?;
    seal(plane, SHOWCASE, "shown", 1, PUBLISHED)?;
    write_status(plane, SHOWCASE, "shown", failed("shown", 1))?;
    plugin::run(alice, &["retry", "shown", "-n", SHOWCASE])?.ok()?;
    seal(plane, SHOWCASE, "shown", 2, PUBLISHED)?;
    write_status(plane, SHOWCASE, "shown", succeeded("shown", 2))?;
    plugin::run(
        alice,
        &[
            "install", "fresh", "-n", SHOWCASE, "--recipe", "podinfo", "--edge", "edge-2",
        ],
    )?
    .ok()?;
    Ok(())
}

/// Output stable across runs: UIDs replaced, ages masked.
fn stable(plane: &ControlPlaneInfo, text: &str) -> anyhow::Result<String> {
    let uid = get(plane, SHOWCASE, "shown")?["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok(plugin::normalize(text, &[(&uid, "<uid>")]))
}

mod errors;
mod install;
mod keys;
mod plan_verify;
mod values;
mod views;
mod wait;
