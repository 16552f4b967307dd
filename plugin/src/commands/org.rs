//! `org add|remove|list`: onboarding an organization, for the platform team.
//!
//! `add` applies (or, with `--dry-run`, prints for GitOps) the labelled namespace, the
//! tenants' RoleBinding and the installer's RoleBinding; `remove` takes the RoleBindings and
//! the label away — the installer's rights in that namespace go with them — and leaves the
//! namespace and its Workspaces; `list` shows the organizations and whether the installer
//! serves each.

use k8s_openapi::api::{
    core::v1::Namespace,
    rbac::v1::{ClusterRoleBinding, RoleBinding, Subject},
};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams},
};
use providers_shared::organization::{
    INSTALLER_BINDING, ORGANIZATION_LABEL, Organization, TENANT_BINDING, onboarding,
};
use serde_json::{Value, json};

use crate::{
    cli::{OrgAddArgs, OrgCommand},
    commands::Ctx,
    intent::FIELD_MANAGER,
    output::{Rendered, list, resource_name},
    report::user_error,
    table::{Table, col},
};

/// The installer's cluster-wide binding (manifests/controller/rbac.yaml, the chart): its
/// ServiceAccount subject is the installer as installed.
const INSTALLER_CLUSTER_BINDING: &str = "providers-controller";

/// The installer's ServiceAccount as installed (namespace, name), if its cluster binding
/// can be read.
async fn installed_installer(ctx: &Ctx) -> anyhow::Result<Option<(String, String)>> {
    let binding = Api::<ClusterRoleBinding>::all(ctx.conn.client.clone())
        .get_opt(INSTALLER_CLUSTER_BINDING)
        .await;
    let binding = match binding {
        Ok(binding) => binding,
        // Not the caller's to read: nothing to compare with.
        Err(kube::Error::Api(status)) if status.code == 403 => None,
        Err(error) => return Err(error.into()),
    };
    Ok(binding
        .and_then(|b| b.subjects)
        .into_iter()
        .flatten()
        .find(|s| s.kind == "ServiceAccount")
        .map(|s| (s.namespace.unwrap_or_default(), s.name)))
}

fn is_account(subject: &Subject, (namespace, name): &(String, String)) -> bool {
    subject.kind == "ServiceAccount"
        && subject.name == *name
        && subject.namespace.as_deref() == Some(namespace.as_str())
}

pub async fn run(ctx: &Ctx, command: OrgCommand) -> anyhow::Result<()> {
    match command {
        OrgCommand::Add(args) => add(ctx, args).await,
        OrgCommand::Remove { name, dry_run } => remove(ctx, &name, dry_run).await,
        OrgCommand::List => list_organizations(ctx).await,
    }
}

async fn add(ctx: &Ctx, args: OrgAddArgs) -> anyhow::Result<()> {
    if args.groups.is_empty() && args.users.is_empty() {
        return Err(user_error(
            format!("organization {}: name its tenants", args.name),
            Some("pass --group GROUP or --tenant-user USER (repeatable)".to_owned()),
        ));
    }
    let objects = onboarding(&Organization {
        name: args.name.clone(),
        groups: args.groups,
        users: args.users,
        installer: (
            args.installer_namespace.clone(),
            args.installer_service_account.clone(),
        ),
    });
    let data = list(vec![
        serde_json::to_value(&objects.namespace)?,
        serde_json::to_value(&objects.tenants)?,
        serde_json::to_value(&objects.installer)?,
    ]);
    let names = vec![
        resource_name("Namespace", "", &args.name),
        resource_name("RoleBinding", "rbac.authorization.k8s.io", TENANT_BINDING),
        resource_name(
            "RoleBinding",
            "rbac.authorization.k8s.io",
            INSTALLER_BINDING,
        ),
    ];
    if !args.dry_run {
        // Rights bound to an account that is not the installer would be held by an
        // identity the installer's confinement policy does not confine.
        let wanted = (
            args.installer_namespace.clone(),
            args.installer_service_account.clone(),
        );
        if let Some(installed) = installed_installer(ctx).await?
            && installed != wanted
        {
            return Err(user_error(
                format!(
                    "organization {}: the installer runs as {}, not {}",
                    args.name,
                    providers_shared::text::object_key(&installed.0, &installed.1),
                    providers_shared::text::object_key(&wanted.0, &wanted.1)
                ),
                Some(format!(
                    "pass --installer-namespace {} --installer-service-account {} (or set PROVIDERS_NAMESPACE={})",
                    installed.0, installed.1, installed.0
                )),
            ));
        }
        let client = &ctx.conn.client;
        let apply = PatchParams::apply(FIELD_MANAGER);
        Api::<Namespace>::all(client.clone())
            .patch(&args.name, &apply, &Patch::Apply(&objects.namespace))
            .await?;
        let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), &args.name);
        for binding in [&objects.tenants, &objects.installer] {
            bindings
                .patch(&binding.name_any(), &apply, &Patch::Apply(binding))
                .await?;
        }
    }
    let verb = if args.dry_run { "would be" } else { "is" };
    let text = format!(
        "organization {name} {verb} onboarded: namespace {name} (labelled {ORGANIZATION_LABEL}=true), RoleBinding {TENANT_BINDING} for its tenants, RoleBinding {INSTALLER_BINDING} for the installer\n",
        name = args.name
    );
    ctx.print(&Rendered::text(data, text, names))
}

async fn remove(ctx: &Ctx, name: &str, dry_run: bool) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let Some(namespace) = namespaces.get_opt(name).await? else {
        return Err(user_error(
            format!("namespace {name} does not exist"),
            Some("kubectl provider org list shows the organizations".to_owned()),
        ));
    };
    if !dry_run {
        let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), name);
        for binding in [INSTALLER_BINDING, TENANT_BINDING] {
            match bindings.delete(binding, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.is_not_found() => {}
                Err(error) => return Err(error.into()),
            }
        }
        if namespace.labels().contains_key(ORGANIZATION_LABEL) {
            let label = json!({"metadata": {"labels": {ORGANIZATION_LABEL: null}}});
            namespaces
                .patch(name, &PatchParams::default(), &Patch::Merge(&label))
                .await?;
        }
    }
    let verb = if dry_run { "would be" } else { "is" };
    let text = format!(
        "organization {name} {verb} removed: the installer's and the tenants' RoleBindings are deleted and the namespace is no longer labelled an organization; the namespace and its Workspaces stay\n"
    );
    ctx.print(&Rendered::text(
        Value::Null,
        text,
        vec![resource_name("Namespace", "", name)],
    ))
}

async fn list_organizations(ctx: &Ctx) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let namespaces = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default().labels(&format!("{ORGANIZATION_LABEL}=true")))
        .await?
        .items;
    let installed = installed_installer(ctx).await?;
    let mut table = Table::new(&[col("NAME"), col("INSTALLER")]);
    let mut items = Vec::new();
    for namespace in &namespaces {
        let name = namespace.name_any();
        let binding = Api::<RoleBinding>::namespaced(client.clone(), &name)
            .get_opt(INSTALLER_BINDING)
            .await?;
        // Bound to the installer as installed, when that can be read; a binding to any
        // other account serves nobody and grants someone else the installer's rights.
        let bound_to_installer = binding.as_ref().is_some_and(|b| {
            installed.as_ref().is_none_or(|installed| {
                b.subjects
                    .iter()
                    .flatten()
                    .any(|subject| is_account(subject, installed))
            })
        });
        let served = binding.is_some() && bound_to_installer;
        let state = match (binding.is_some(), bound_to_installer) {
            (false, _) => "missing",
            (true, true) => "bound",
            (true, false) => "bound to another account",
        };
        table.push(vec![name.clone(), state.to_owned()]);
        items.push(json!({"name": name, "installerBound": served}));
    }
    let mut rendered = Rendered::text(
        list(items),
        table.render(false),
        namespaces
            .iter()
            .map(|n| resource_name(&Namespace::kind(&()), "", &n.name_any()))
            .collect(),
    );
    rendered.headers = true;
    rendered.rows_at = Some("items");
    if namespaces.is_empty() {
        rendered = Rendered {
            empty: Some("No organizations: onboard one with kubectl provider org add".into()),
            ..Rendered::default()
        };
    }
    ctx.print(&rendered)
}
