//! The edges of a leader's term: one worker per Edge that reads its kubeconfig Secret,
//! probes its API, writes the Edge's status, and watches the installer's Jobs on it.
//! Workers start and stop as Edges come and go; a change of readiness, or of a Job,
//! triggers the Workspaces concerned.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, RwLock},
    time::Duration,
};

use futures::{StreamExt, channel::mpsc::UnboundedSender};
use k8s_openapi::{
    api::core::v1::{Namespace, Secret},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams},
    config::{KubeConfigOptions, Kubeconfig},
    runtime::{
        WatchStreamExt,
        reflector::{ObjectRef, Store},
        watcher,
    },
};
use providers::{
    api::{Edge, EdgeSpec, Workspace},
    installer::{EdgeRoute, EdgeState},
};
use serde_json::json;

use super::{
    context::Context,
    edge_cache::{EdgeCache, Watches},
    error::is_transport,
    metrics::EdgeLabels,
    term::Task,
};

/// What the reconciler needs of an edge.
#[derive(Clone)]
struct Entry {
    state: EdgeState,
    client: Option<Client>,
    cache: Option<EdgeCache>,
    since: Timestamp,
}

/// An edge as a decision sees it: its state, and while it is Ready a client for writes and
/// the caches for reads.
#[derive(Clone)]
pub struct EdgeView {
    pub state: EdgeState,
    pub client: Option<Client>,
    pub cache: Option<EdgeCache>,
}

/// The edges known in this term.
#[derive(Clone, Default)]
pub struct Edges {
    inner: Arc<RwLock<Registry>>,
}

#[derive(Default)]
struct Registry {
    entries: HashMap<String, Entry>,
    /// Whether the first list of Edges is in: an unknown edge is then missing.
    synced: bool,
}

impl Edges {
    /// The state of an edge, with a client and its caches when it is Ready.
    pub fn lookup(&self, name: &str) -> EdgeView {
        let view = |state| EdgeView {
            state,
            client: None,
            cache: None,
        };
        let Ok(registry) = self.inner.read() else {
            return view(EdgeState::NotReady(
                "the edge registry is unavailable".into(),
            ));
        };
        match registry.entries.get(name) {
            Some(entry) => EdgeView {
                state: entry.state.clone(),
                client: entry.client.clone(),
                cache: entry.cache.clone(),
            },
            None if registry.synced => view(EdgeState::Missing),
            None => view(EdgeState::Unprobed),
        }
    }

    /// The Ready edges and their clients.
    pub fn ready(&self) -> Vec<(String, Client)> {
        let Ok(registry) = self.inner.read() else {
            return Vec::new();
        };
        registry
            .entries
            .iter()
            .filter(|(_, entry)| matches!(entry.state, EdgeState::Ready(_)))
            .filter_map(|(name, entry)| Some((name.clone(), entry.client.clone()?)))
            .collect()
    }

    /// Forgets everything: a new term probes afresh.
    pub fn reset(&self) {
        if let Ok(mut registry) = self.inner.write() {
            *registry = Registry::default();
        }
    }

    fn set_synced(&self) {
        if let Ok(mut registry) = self.inner.write() {
            registry.synced = true;
        }
    }

    /// Records a probe; returns the time of the last change of state.
    fn record(
        &self,
        name: &str,
        state: EdgeState,
        client: Option<(Client, EdgeCache)>,
    ) -> (bool, Timestamp) {
        let Ok(mut registry) = self.inner.write() else {
            return (false, Timestamp::now());
        };
        let previous = registry.entries.get(name);
        let changed = previous.is_none_or(|p| p.state != state);
        let since = match previous {
            Some(p) if !changed => p.since,
            _ => Timestamp::now(),
        };
        let (client, cache) = client.unzip();
        registry.entries.insert(
            name.to_owned(),
            Entry {
                state,
                client,
                cache,
                since,
            },
        );
        (changed, since)
    }

    fn remove(&self, name: &str) {
        if let Ok(mut registry) = self.inner.write() {
            registry.entries.remove(name);
        }
    }
}

/// Follows the Edges until the term ends.
pub async fn run(
    ctx: Arc<Context>,
    store: Store<Workspace>,
    trigger: UnboundedSender<ObjectRef<Workspace>>,
) {
    let api: Api<Edge> = Api::all(ctx.hub.clone());
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut workers: HashMap<String, (EdgeSpec, Task)> = HashMap::new();
    let mut listed: HashSet<String> = HashSet::new();
    let wake = Waker { store, trigger };
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(%error, "watching Edges");
                continue;
            }
        };
        match event {
            watcher::Event::Init => listed.clear(),
            watcher::Event::InitApply(edge) => {
                listed.insert(edge.name_any());
                start(&ctx, &wake, &mut workers, edge);
            }
            watcher::Event::InitDone => {
                let gone: Vec<String> = workers
                    .keys()
                    .filter(|n| !listed.contains(*n))
                    .cloned()
                    .collect();
                for name in gone {
                    stop(&ctx, &wake, &mut workers, &name);
                }
                ctx.edges.set_synced();
                // Workspaces of edges that do not exist learn it now.
                wake.all();
            }
            watcher::Event::Apply(edge) => start(&ctx, &wake, &mut workers, edge),
            watcher::Event::Delete(edge) => stop(&ctx, &wake, &mut workers, &edge.name_any()),
        }
    }
}

fn start(
    ctx: &Arc<Context>,
    wake: &Waker,
    workers: &mut HashMap<String, (EdgeSpec, Task)>,
    edge: Edge,
) {
    let name = edge.name_any();
    if workers
        .get(&name)
        .is_some_and(|(spec, _)| *spec == edge.spec)
    {
        return;
    }
    tracing::info!(edge = %name, "starting the edge's probe and Job watch");
    let task = Task::spawn(probe_loop(
        ctx.clone(),
        wake.clone(),
        name.clone(),
        edge.spec.clone(),
    ));
    workers.insert(name, (edge.spec, task));
}

fn stop(
    ctx: &Arc<Context>,
    wake: &Waker,
    workers: &mut HashMap<String, (EdgeSpec, Task)>,
    name: &str,
) {
    tracing::info!(edge = %name, "the Edge is gone: stopping its probe and Job watch");
    workers.remove(name);
    ctx.edges.remove(name);
    ctx.metrics.edge_ready.remove(&EdgeLabels {
        edge: name.to_owned(),
    });
    wake.edge(name);
}

/// Triggers reconciles of Workspaces.
#[derive(Clone)]
struct Waker {
    store: Store<Workspace>,
    trigger: UnboundedSender<ObjectRef<Workspace>>,
}

impl Waker {
    fn edge(&self, edge: &str) {
        for workspace in self.store.state() {
            let targets = workspace.spec.edge == edge
                || workspace
                    .spec
                    .plan
                    .as_ref()
                    .is_some_and(|p| p.plan.edge_name == edge)
                || workspace
                    .status
                    .as_ref()
                    .and_then(|s| s.target.as_ref())
                    .is_some_and(|t| t.edge == edge);
            if targets {
                let _ = self
                    .trigger
                    .unbounded_send(ObjectRef::from_obj(&*workspace));
            }
        }
    }

    fn all(&self) {
        for workspace in self.store.state() {
            let _ = self
                .trigger
                .unbounded_send(ObjectRef::from_obj(&*workspace));
        }
    }

    fn workspace(&self, key: &str) {
        if let Some((namespace, name)) = key.split_once('/') {
            let _ = self
                .trigger
                .unbounded_send(ObjectRef::new(name).within(namespace));
        }
    }
}

/// The clients of one kubeconfig: short timeouts for requests, none for the watches that
/// fill the edge's caches.
struct Clients {
    kubeconfig: String,
    request: Client,
    server: String,
    watches: Watches,
}

async fn probe_loop(ctx: Arc<Context>, wake: Waker, name: String, spec: EdgeSpec) {
    let interval = Duration::from_secs(ctx.args.edge_probe_interval.max(1));
    let most = Duration::from_secs(ctx.args.edge_probe_max_backoff.max(1));
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
                    let allow_exec = ctx.args.allow_edge_kubeconfig_exec;
                    clients = match connect(&text, allow_exec, &wake).await {
                        Ok(c) => Some(c),
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
                    Some(c) => probe(&c.request, &spec, &c.server).await,
                }
            }
        };
        let client = match (&state, &clients) {
            (EdgeState::Ready(_), Some(c)) => {
                // The edge answered: whatever a failed write or watch said before is over.
                c.watches.cache.set_unreachable(None);
                Some((c.request.clone(), c.watches.cache.clone()))
            }
            _ => None,
        };
        let (changed, since) = ctx.edges.record(&name, state.clone(), client);
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

async fn kubeconfig_of(ctx: &Context, spec: &EdgeSpec) -> Result<String, String> {
    let r = &spec.kubeconfig_secret_ref;
    if r.namespace != ctx.args.edge_credentials_namespace {
        // The installer reads Secrets in that one namespace only (docs/security.md).
        return Err(format!(
            "its kubeconfig Secret must be in the edge credentials namespace {:?}, not {}: move the Secret there and point spec.kubeconfigSecretRef at it",
            ctx.args.edge_credentials_namespace,
            providers::text::quoted(&r.namespace)
        ));
    }
    let api: Api<Secret> = Api::namespaced(ctx.hub.clone(), &r.namespace);
    let secret = api
        .get_opt(&r.name)
        .await
        .map_err(|e| {
            format!(
                "cannot read its kubeconfig Secret {}/{}: {e}",
                r.namespace, r.name
            )
        })?
        .ok_or_else(|| {
            format!(
                "its kubeconfig Secret {}/{} does not exist",
                r.namespace, r.name
            )
        })?;
    let bytes = secret
        .data
        .and_then(|mut d| d.remove(&r.key))
        .ok_or_else(|| {
            format!(
                "its kubeconfig Secret {}/{} has no key {:?}",
                r.namespace, r.name, r.key
            )
        })?;
    String::from_utf8(bytes.0).map_err(|_| {
        format!(
            "the kubeconfig in Secret {}/{} is not UTF-8",
            r.namespace, r.name
        )
    })
}

async fn connect(text: &str, allow_exec: bool, wake: &Waker) -> Result<Clients, String> {
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| e.to_string())?;
    if !allow_exec {
        refuse_programs(&kubeconfig)?;
    }
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| e.to_string())?;
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
    let watch = Client::try_from(config).map_err(|e| e.to_string())?;
    let waker = wake.clone();
    let watches = Watches::start(
        &watch,
        Arc::new(move |workspace: &str| waker.workspace(workspace)),
    );
    Ok(Clients {
        kubeconfig: text.to_owned(),
        request,
        server,
        watches,
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
        Err(error) if is_transport(&error) => EdgeState::Unreachable(format!("{server}: {error}")),
        Err(kube::Error::Api(status)) => EdgeState::NotReady(format!(
            "its API at {server} refused the installer's credential: {} ({})",
            status.message, status.code
        )),
        Err(error) => EdgeState::NotReady(format!("{server}: {error}")),
    }
}

async fn write_status(ctx: &Context, name: &str, state: &EdgeState, since: Timestamp) {
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
