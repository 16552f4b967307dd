//! Applying a Workspace's intent and telling the user what happened.

use kube::{
    Api,
    api::{ApiResource, DynamicObject},
};
use providers_shared::api::Workspace;

use crate::{
    attempt_state::wait_outcome::{Wait, wait_outcome},
    commands::Ctx,
    intent::{Intent, apply_body, params, patch},
    objects::{self, Fetched},
    output::Rendered,
    views::workspaces::name_of,
    wait,
};

/// How a write is sent.
pub struct Write<'a> {
    pub name: &'a str,
    pub intent: &'a Intent,
    /// The resourceVersion the intent was computed from, as a precondition.
    pub resource_version: Option<&'a str>,
    pub force: bool,
    pub dry_run: bool,
}

/// Server-side applies the intent; returns the object the API server answered with.
pub async fn apply(ctx: &Ctx, write: &Write<'_>) -> anyhow::Result<Fetched<Workspace>> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        ctx.conn.client.clone(),
        &ctx.conn.namespace,
        &ApiResource::erase::<Workspace>(&()),
    );
    let body = apply_body(
        &ctx.conn.namespace,
        write.name,
        write.intent,
        write.resource_version,
    );
    // The API server reads an apply body as YAML: the JSON goes out with the characters
    // YAML would misread or refuse escaped (providers_shared::text::yaml_safe), so a value reaches
    // the Workspace exactly as the user wrote it.
    let request = kube::core::Request::new(api.resource_url())
        .patch(
            write.name,
            &params(write.force, write.dry_run),
            &patch(&body),
        )?
        .map(|_| providers_shared::text::yaml_safe(body.to_string()).into_bytes());
    let object: DynamicObject = ctx.conn.client.request(request).await?;
    objects::parse(object)
}

/// Whether an error is the API server refusing a write computed from an outdated read.
pub fn is_stale(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<kube::Error>(),
            Some(kube::Error::Api(status))
                if status.code == 409 && status.message.contains("the object has been modified")
        )
    })
}

/// Prints the result of a write (`workspace.providers.platform.dev/demo configured`), then,
/// with `wait`, follows the attempt and prints how it ended.
pub async fn report(
    ctx: &Ctx,
    result: &Fetched<Workspace>,
    verb: &str,
    dry_run: bool,
    wait: Option<std::time::Duration>,
) -> anyhow::Result<()> {
    let name = name_of(&result.typed);
    let suffix = if dry_run { " (server dry run)" } else { "" };
    let mut line = format!("{name} {verb}{suffix}");
    if dry_run && let Some(sealed) = &result.typed.spec.plan {
        let plan = &sealed.plan;
        line.push_str(&format!(
            "\nwould run attempt {}: {} {} as release {} in namespace {} on edge {}",
            plan.attempt,
            plan.chart.name,
            plan.version,
            plan.release,
            plan.namespace,
            plan.edge_name
        ));
    }
    let Some(timeout) = wait.filter(|_| !dry_run) else {
        return ctx.print(&Rendered::text(
            result.raw.clone(),
            format!("{line}\n"),
            vec![name],
        ));
    };
    ctx.say(&line)?;
    let done =
        wait::until_done(&ctx.conn, &ctx.conn.namespace, write_name(result), timeout).await?;
    let text = match wait_outcome(&done.typed) {
        Wait::Ready(summary) => format!("{name} is ready: {summary}\n"),
        _ => format!("{name} is ready\n"),
    };
    ctx.print(&Rendered::text(done.raw.clone(), text, vec![name]))
}

fn write_name(result: &Fetched<Workspace>) -> &str {
    result.typed.metadata.name.as_deref().unwrap_or_default()
}
