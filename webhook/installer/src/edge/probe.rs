//! One Edge's worker: reads its kubeconfig Secret, connects (refusing credentials that run
//! programs), probes its API, starts its watches and writes the Edge's status.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::core::v1::{Namespace, Secret},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use providers_shared::{
    api::{Edge, EdgeSpec},
    installer::{EdgeRoute, EdgeState},
};
use serde_json::json;

use super::{handles::EdgeHandles, reconcile_trigger::ReconcileTrigger};
use crate::support::metrics::EdgeLabels;
use providers_edge_watch::{StreamPool, watches::Watches};
use providers_runtime::unreachable::did_not_answer;

/// The clients of one kubeconfig: short timeouts for requests, none for the watches that
/// fill the edge's caches.
struct Clients {
    kubeconfig: String,
    request: Client,
    server: String,
    watches: Watches,
    streams: StreamPool,
}

pub(super) async fn probe_loop(
    ctx: Arc<EdgeHandles>,
    wake: ReconcileTrigger,
    name: String,
    spec: EdgeSpec,
) {
    let interval = ctx.probe.interval;
    let most = ctx.probe.max_backoff;
    let mut backoff = Duration::from_secs(1);
    let mut clients: Option<Clients> = None;
    let mut written: Option<(EdgeState, Timestamp)> = None;
    loop {
        let state = match kubeconfig_of(&ctx, &spec).await {
            Err(why) => {
                clients = None;
                EdgeState::NotReady(why)
            }
            Ok(text) => {
                let mut refused = None;
                if clients.as_ref().is_none_or(|c| c.kubeconfig != text) {
                    let allow_exec = ctx.probe.allow_kubeconfig_exec;
                    let streams = ctx.probe.watch_streams_per_connection;
                    clients = match connect(&text, allow_exec, streams, &wake).await {
                        Ok(connected) => Some(connected),
                        Err(why) => {
                            tracing::warn!(edge = %name, %why, "cannot use the edge's kubeconfig");
                            refused = Some(why);
                            None
                        }
                    };
                }
                match &clients {
                    None => EdgeState::NotReady(format!(
                        "the kubeconfig in Secret {}/{} cannot be used: {}",
                        spec.kubeconfig_secret_ref.namespace,
                        spec.kubeconfig_secret_ref.name,
                        refused.unwrap_or_default()
                    )),
                    Some(connected) => probe(&connected.request, &spec, &connected.server).await,
                }
            }
        };
        let client = match (&state, &clients) {
            (EdgeState::Ready(_), Some(connected)) => {
                // The edge answered: whatever a failed write or watch said before is over.
                connected.watches.cache.set_unreachable(None);
                Some((connected.request.clone(), connected.watches.cache.clone()))
            }
            _ => None,
        };
        if let Some(connected) = &clients {
            ctx.metrics
                .edge_namespace_watches
                .get_or_create(&EdgeLabels { edge: name.clone() })
                .set(connected.watches.cache.namespaces_watched() as i64);
            ctx.metrics
                .edge_follow_watches
                .get_or_create(&EdgeLabels { edge: name.clone() })
                .set(connected.watches.cache.follow_watches() as i64);
            ctx.metrics
                .edge_watch_connections
                .get_or_create(&EdgeLabels { edge: name.clone() })
                .set(connected.streams.connections() as i64);
        }
        let (changed, since) = ctx.edges.record_probe(&name, state.clone(), client);
        let ready = matches!(state, EdgeState::Ready(_));
        ctx.metrics
            .edge_ready
            .get_or_create(&EdgeLabels { edge: name.clone() })
            .set(i64::from(ready));
        if changed {
            match &state {
                EdgeState::Ready(_) => tracing::info!(edge = %name, "the edge is Ready"),
                other => tracing::warn!(edge = %name, state = ?other, "the edge is not Ready"),
            }
            wake.edge(&name);
        }
        let stale = written.as_ref().is_none_or(|(s, at)| {
            *s != state || Timestamp::now().duration_since(*at).as_secs() >= 60
        });
        if stale {
            write_status(&ctx, &name, &state, since).await;
            written = Some((state.clone(), Timestamp::now()));
        }
        let wait = match state {
            EdgeState::Ready(_) => {
                backoff = Duration::from_secs(1);
                interval
            }
            EdgeState::Unreachable(_) => {
                let wait = backoff;
                backoff = (backoff * 2).min(most);
                tracing::debug!(edge = %name, next_probe_in = ?wait, "the edge is unreachable; backing off");
                wait
            }
            _ => interval,
        };
        tokio::time::sleep(wait).await;
    }
}

async fn kubeconfig_of(ctx: &EdgeHandles, spec: &EdgeSpec) -> Result<String, String> {
    let secret_ref = &spec.kubeconfig_secret_ref;
    if secret_ref.namespace != ctx.probe.credentials_namespace {
        // The installer reads Secrets in that one namespace only (docs/security.md).
        return Err(format!(
            "its kubeconfig Secret must be in the edge credentials namespace {:?}, not {}: move the Secret there and point spec.kubeconfigSecretRef at it",
            ctx.probe.credentials_namespace,
            providers_shared::text::quoted(&secret_ref.namespace)
        ));
    }
    let api: Api<Secret> = Api::namespaced(ctx.hub.clone(), &secret_ref.namespace);
    let secret = api
        .get_opt(&secret_ref.name)
        .await
        .map_err(|e| {
            format!(
                "cannot read its kubeconfig Secret {}/{}: {e}",
                secret_ref.namespace, secret_ref.name
            )
        })?
        .ok_or_else(|| {
            format!(
                "its kubeconfig Secret {}/{} does not exist",
                secret_ref.namespace, secret_ref.name
            )
        })?;
    let bytes = secret
        .data
        .and_then(|mut d| d.remove(&secret_ref.key))
        .ok_or_else(|| {
            format!(
                "its kubeconfig Secret {}/{} has no key {:?}",
                secret_ref.namespace, secret_ref.name, secret_ref.key
            )
        })?;
    String::from_utf8(bytes.0).map_err(|_| {
        format!(
            "the kubeconfig in Secret {}/{} is not UTF-8",
            secret_ref.namespace, secret_ref.name
        )
    })
}

async fn connect(
    text: &str,
    allow_exec: bool,
    streams_per_connection: u16,
    wake: &ReconcileTrigger,
) -> Result<Clients, String> {
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| e.to_string())?;
    if !allow_exec {
        refuse_programs(&kubeconfig)?;
    }
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| e.to_string())?;
    providers_runtime::client::identify(&mut config, providers_runtime::client::INSTALLER_AGENT);
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_owned();
    let mut request = config.clone();
    request.connect_timeout = Some(Duration::from_secs(5));
    request.read_timeout = Some(Duration::from_secs(30));
    request.reset_reader_on_write = true;
    let request = Client::try_from(request).map_err(|e| e.to_string())?;
    let streams = StreamPool::new(config.clone(), streams_per_connection);
    let watch = Client::try_from(config).map_err(|e| e.to_string())?;
    let waker = wake.clone();
    let watches = Watches::start(
        &watch,
        streams.clone(),
        Arc::new(move |workspace: &str| waker.workspace(workspace)),
    );
    Ok(Clients {
        kubeconfig: text.to_owned(),
        request,
        server,
        watches,
        streams,
    })
}

/// An `exec` or `auth-provider` user runs a program (or a plugin) inside the installer with
/// its identity; a kubeconfig Secret that names one is refused unless the platform opted in.
fn refuse_programs(kubeconfig: &Kubeconfig) -> Result<(), String> {
    for named in &kubeconfig.auth_infos {
        let Some(user) = &named.auth_info else {
            continue;
        };
        let kind = if user.exec.is_some() {
            "an exec credential plugin"
        } else if user.auth_provider.is_some() {
            "an auth-provider"
        } else {
            continue;
        };
        return Err(format!(
            "user {:?} of the kubeconfig uses {kind}, which would run a program in the installer; use a token or a client certificate, or start the installer with --allow-edge-kubeconfig-exec",
            named.name
        ));
    }
    Ok(())
}

/// A request that needs a working credential with the rights the installer needs.
async fn probe(client: &Client, spec: &EdgeSpec, server: &str) -> EdgeState {
    let api: Api<Namespace> = Api::all(client.clone());
    match api.list_metadata(&ListParams::default().limit(1)).await {
        Ok(_) => EdgeState::Ready(EdgeRoute {
            cluster: spec.cluster_id.clone(),
            workspace_uuid: spec.workspace_uuid.clone(),
            server: server.to_owned(),
        }),
        Err(error) if did_not_answer(&error) => {
            EdgeState::Unreachable(format!("{server}: {error}"))
        }
        Err(kube::Error::Api(status)) => EdgeState::NotReady(format!(
            "its API at {server} refused the installer's credential: {} ({})",
            status.message, status.code
        )),
        Err(error) => EdgeState::NotReady(format!("{server}: {error}")),
    }
}

async fn write_status(ctx: &EdgeHandles, name: &str, state: &EdgeState, since: Timestamp) {
    // Fenced like every write for an edge: a replica that lost the edge's Lease (or was
    // paused past its renew deadline) does not overwrite the new owner's status.
    if !ctx.shards.holds(name) {
        return;
    }
    let (ready, reason, message, server) = match state {
        EdgeState::Ready(route) => (
            true,
            "Probed",
            "the edge's API answered".to_owned(),
            Some(route.server.clone()),
        ),
        EdgeState::Unreachable(why) => (false, "Unreachable", why.clone(), None),
        EdgeState::NotReady(why) => (false, "NotReady", why.clone(), None),
        EdgeState::Missing | EdgeState::Unprobed => return,
    };
    let mut status = json!({
        "ready": ready,
        "lastProbeTime": Time(Timestamp::now()),
        "installer": ctx.identity,
        "conditions": [{
            "type": "Ready",
            "status": if ready { "True" } else { "False" },
            "reason": reason,
            "message": message,
            "lastTransitionTime": Time(since),
        }],
    });
    if let Some(server) = server {
        status["server"] = json!(server);
    }
    let api: Api<Edge> = Api::all(ctx.hub.clone());
    if let Err(error) = api
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
    {
        tracing::warn!(edge = %name, %error, "cannot write the Edge's status");
    }
}
