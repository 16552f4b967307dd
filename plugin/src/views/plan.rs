//! `kubectl provider plan`: the sealed plan of the current attempt, and checking its seal.

use providers_shared::{
    admission::binding_of,
    api::{SealedPlan, Workspace},
    seal::Keyring,
    verify::verify_plan,
};

use crate::{objects::Fetched, output::Rendered, table::Fields, views::workspaces::name_of};

/// Checks a Workspace's sealed plan exactly as the installer does before it runs it
/// ([`providers_shared::verify::verify_plan`]): the signature against the published keys, no dry
/// run, and bound to this very Workspace (a plan copied from another Workspace, or from a
/// deleted one of the same name, carries a valid signature but the wrong identity).
/// Returns the signing key's ID, or why the plan cannot be trusted.
pub fn verify(keyring: &Keyring, ws: &Workspace) -> Result<String, String> {
    let Some(sealed) = &ws.spec.plan else {
        return Err("the Workspace has no sealed plan".to_owned());
    };
    verify_plan(sealed, keyring, &binding_of(ws)).map_err(|e| e.to_string())?;
    Ok(sealed.seal.key_id.clone())
}

/// The sealed plan in words. `verified` is the key ID when `--verify` succeeded.
pub fn plan_detail(
    item: &Fetched<Workspace>,
    sealed: &SealedPlan,
    values: &Result<serde_json::Value, String>,
    verified: Option<&str>,
) -> Rendered {
    let ws = &item.typed;
    let plan = &sealed.plan;
    let mut fields = Fields::new();
    let uid = if plan.workspace.uid.is_empty() {
        "bound at creation".to_owned()
    } else {
        format!("uid {}", plan.workspace.uid)
    };
    fields
        .add(
            "Workspace",
            format!(
                "{} ({uid})",
                providers_shared::text::object_key(&plan.workspace.namespace, &plan.workspace.name)
            ),
        )
        .add(
            "Attempt",
            format!(
                "{} (id {}, retry {})",
                plan.attempt, plan.attempt_id, plan.retry
            ),
        )
        .add("Owner", plan.owner.username.clone())
        .add("Provider", plan.provider.clone())
        .add(
            "Chart",
            format!(
                "{} {} from {}",
                plan.chart.name, plan.version, plan.chart.repository
            ),
        )
        .add(
            "Installs",
            format!("release {} in namespace {}", plan.release, plan.namespace),
        )
        .add(
            "Edge",
            format!(
                "{} (cluster {}, edge workspace {})",
                plan.edge_name, plan.cluster, plan.edge_workspace_uuid
            ),
        )
        .add("Job", plan.job.clone());
    if let Some(cred) = &plan.runtime_credential {
        fields.add(
            "Hub access",
            format!(
                "role {}, kubeconfig Secret name at value {}",
                cred.role, cred.value_path
            ),
        );
    }
    fields.add(
        "Seal",
        format!("{}, key {}", sealed.seal.algorithm, sealed.seal.key_id),
    );
    if let Some(digest) = &plan.values_digest {
        fields.add("Values digest", digest.clone());
    }
    if let Some(key) = verified {
        fields.add(
            "Verified",
            format!(
                "yes: signed by published key {key}, sealed for this Workspace, values as sealed"
            ),
        );
    }
    let mut text = fields.render();
    if !plan.execution.is_empty() {
        text.push_str("Runner rights in the release namespace:\n");
        for rule in &plan.execution {
            let groups: Vec<&str> = rule
                .api_groups
                .iter()
                .map(|g| if g.is_empty() { "core" } else { g.as_str() })
                .collect();
            text.push_str(&format!(
                "  {} {}: {}\n",
                groups.join(","),
                rule.resources.join(","),
                rule.verbs.join(",")
            ));
        }
    }
    match values {
        Ok(values) => {
            text.push_str("Values:\n");
            let values = serde_norway::to_string(values).unwrap_or_default();
            for line in values.lines() {
                text.push_str(&format!("  {line}\n"));
            }
        }
        Err(why) => text.push_str(&format!("Values: not shown: {why}\n")),
    }
    let raw_plan = item.raw.pointer("/spec/plan").cloned().unwrap_or_default();
    Rendered::text(raw_plan, text, vec![name_of(ws)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;
    use providers_shared::seal::Sealer;
    use serde_json::json;

    fn sealed_workspace(sealer: &Sealer) -> Workspace {
        let mut raw = testdata::workspace_json(json!({}));
        let plan: SealedPlan = serde_json::from_value(raw["spec"]["plan"].clone()).unwrap();
        let sealed = sealer.seal(plan.plan).unwrap();
        raw["spec"]["plan"] = serde_json::to_value(&sealed).unwrap();
        serde_json::from_value(raw).unwrap()
    }

    #[test]
    fn a_plan_sealed_for_this_workspace_verifies() {
        let sealer = Sealer::from_seed([7; 32]);
        let ws = sealed_workspace(&sealer);
        assert_eq!(
            verify(&Keyring::from(&sealer), &ws),
            Ok(sealer.key_id().to_owned())
        );
    }

    #[test]
    fn a_changed_plan_fails() {
        let sealer = Sealer::from_seed([7; 32]);
        let mut ws = sealed_workspace(&sealer);
        ws.spec.plan.as_mut().unwrap().plan.values = Some(json!({"replicaCount": 50}));
        let error = verify(&Keyring::from(&sealer), &ws).unwrap_err();
        assert!(error.contains("does not match its contents"), "{error}");
    }

    #[test]
    fn an_unknown_key_fails() {
        let ws = sealed_workspace(&Sealer::from_seed([7; 32]));
        let other = Keyring::from(&Sealer::from_seed([8; 32]));
        let error = verify(&other, &ws).unwrap_err();
        assert!(error.contains("not among the published keys"), "{error}");
    }

    #[test]
    fn a_plan_for_another_workspace_fails() {
        let sealer = Sealer::from_seed([7; 32]);
        let mut ws = sealed_workspace(&sealer);
        ws.metadata.name = Some("copy".into());
        let error = verify(&Keyring::from(&sealer), &ws).unwrap_err();
        assert!(
            error.contains("cannot be copied between Workspaces"),
            "{error}"
        );

        let mut ws = sealed_workspace(&sealer);
        ws.spec.plan.as_mut().unwrap().plan.workspace.uid = "uid-old".into();
        let sealed = sealer.seal(ws.spec.plan.take().unwrap().plan).unwrap();
        ws.spec.plan = Some(sealed);
        ws.metadata.uid = Some("uid-new".into());
        let error = verify(&Keyring::from(&sealer), &ws).unwrap_err();
        assert!(
            error.contains("of a deleted Workspace of the same name"),
            "{error}"
        );
    }

    #[test]
    fn a_dry_run_plan_fails() {
        let sealer = Sealer::from_seed([7; 32]);
        let mut ws = sealed_workspace(&sealer);
        let mut plan = ws.spec.plan.take().unwrap().plan;
        plan.dry_run = true;
        ws.spec.plan = Some(sealer.seal(plan).unwrap());
        let error = verify(&Keyring::from(&sealer), &ws).unwrap_err();
        assert!(error.contains("dry run"), "{error}");
    }

    #[test]
    fn the_detail_shows_what_runs_where() {
        let raw = testdata::workspace_json(json!({}));
        let item = Fetched {
            typed: serde_json::from_value::<Workspace>(raw.clone()).unwrap(),
            raw,
        };
        let sealed = item.typed.spec.plan.clone().unwrap();
        let values = Ok(sealed.plan.values.clone().unwrap_or_default());
        let rendered = plan_detail(&item, &sealed, &values, Some("0123456789abcdef"));
        assert_eq!(
            rendered.table,
            "\
Workspace:  org-a/demo (uid uid-demo)
Attempt:    1 (id att-1, retry 0)
Owner:      alice
Provider:   podinfo
Chart:      podinfo 6.5.0 from https://charts.example/stable
Installs:   release podinfo in namespace podinfo
Edge:       edge-1 (cluster cluster-1, edge workspace 0b6f0f4e-7c1a-4d55-9d1e-3b8f6f1d2a10)
Job:        podinfo-demo-1
Seal:       Ed25519, key 0123456789abcdef
Verified:   yes: signed by published key 0123456789abcdef, sealed for this Workspace, values as sealed
Values:
  replicaCount: 2
  ui:
    message: hello
"
        );
        assert_eq!(rendered.data["attempt"], 1);
    }
}
