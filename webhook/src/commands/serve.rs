//! `providers-webhook serve`: the admission webhooks' process. It loads the sealing keys,
//! keeps Recipes and Edges in watch caches (and the stored PlanValues' metadata), and serves `/mutate` and `/validate` over
//! HTTPS to the API server only; probes and metrics go to the admin port.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::jiff::SignedDuration;
use kube::{
    Api,
    runtime::{WatchStreamExt, reflector, reflector::Store, watcher},
};
use providers_shared::api::{Edge, Recipe};

use providers_admission::{
    AppState, StoredValues,
    metrics::{Metrics, certificates},
    sealing_keys,
    server::{self, TlsFiles, callers::ClientAuth},
};
use providers_runtime::{admin, shutdown::shutdown_signal, synced::Synced};

use crate::cli::ServeArgs;

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let client_auth = client_auth(&args)?;
    let sealer = sealing_keys::load_sealer(&args.sealing_key)?;
    let keyring = sealing_keys::load_keyring(&sealer, args.public_keys_dir.as_deref())?;
    tracing::info!(key_id = sealer.key_id(), accepted = ?keyring.key_ids().collect::<Vec<_>>(), "sealing keys loaded");
    if args.allowed_chart_repositories.is_empty() {
        tracing::warn!("no --allowed-chart-repository: every new attempt will be denied");
    }
    let client = args
        .client
        .client(providers_runtime::client::WEBHOOK_AGENT)
        .await?;
    let metrics = Arc::new(Metrics::new());
    metrics.sealing_with(sealer.key_id());
    certificates::spawn(
        metrics.clone(),
        certificates::CertificateFiles {
            serving: args.tls_cert.clone(),
            callers_ca: args.client_ca.clone(),
        },
        Duration::from_secs(60),
    );
    let (recipes, recipes_listed) = watch_kind(Api::<Recipe>::all(client.clone()));
    let (edges, edges_listed) = watch_kind(Api::<Edge>::all(client.clone()));
    let readiness = Arc::new(ServingReadiness {
        recipes: recipes_listed,
        edges: edges_listed,
        stopping: AtomicBool::new(false),
    });
    {
        let readiness = readiness.clone();
        tokio::spawn(async move {
            readiness.recipes.wait().await;
            readiness.edges.wait().await;
            tracing::info!("recipe and edge caches are warm: ready");
        });
    }
    let stored_values = StoredValues::new(
        SignedDuration::from_secs(i64::try_from(args.plan_values_mark_window).unwrap_or(i64::MAX))
            .min(providers_shared::plan_values::reseal::MAX_MARK_WINDOW),
        metrics.stored_values.clone(),
    );
    stored_values.watch(client.clone());
    let state = Arc::new(AppState {
        client,
        sealer,
        keyring,
        allowlist: args.allowed_chart_repositories.clone(),
        recipes,
        edges,
        stored_values,
        metrics: metrics.clone(),
    });
    admin::spawn(args.admin_listen, metrics, readiness.clone()).await?;
    let app = providers_admission::router(state, args.review_budget_mib.saturating_mul(1 << 20));
    let tls = TlsFiles {
        cert: args.tls_cert.clone(),
        key: args.tls_key.clone(),
    };
    let options = server::ServeOptions {
        client_auth,
        ..Default::default()
    };
    let delay = Duration::from_secs(args.shutdown_delay);
    let shutdown = async move {
        shutdown_signal().await;
        readiness.stopping.store(true, Ordering::Release);
        tracing::info!(
            delay = ?delay,
            "not ready; serving on until the endpoints no longer name this replica"
        );
        tokio::time::sleep(delay).await;
    };
    server::serve(app, tls, args.listen, options, shutdown).await
}

/// Who may call: only holders of a client certificate the given CA signed, for one of the
/// allowed names; or, where the API server cannot present one, anyone who reaches the port,
/// when that is asked for explicitly.
fn client_auth(args: &ServeArgs) -> anyhow::Result<Option<ClientAuth>> {
    match (&args.client_ca, args.allow_unauthenticated_callers) {
        (Some(ca_file), _) => Ok(Some(ClientAuth {
            ca_file: ca_file.clone(),
            allowed: args.allowed_clients.clone(),
        })),
        (None, true) => {
            tracing::warn!(
                "--allow-unauthenticated-callers: any TLS client that reaches the port gets sealed plans; keep the network to the API server only"
            );
            Ok(None)
        }
        (None, false) => anyhow::bail!(
            "the webhook signs plans, so it answers only the API server: pass --client-ca and --allowed-client (the API server's webhook client certificate), or --allow-unauthenticated-callers where the API server cannot present one"
        ),
    }
}

/// A watch cache of every object of a kind, kept until the process ends, and the mark
/// of its first list.
fn watch_kind<K>(api: Api<K>) -> (Store<K>, Arc<Synced>)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let synced = Arc::new(Synced::default());
    let listed = synced.clone();
    let watch = reflector(writer, watcher(api, watcher::Config::default()))
        .default_backoff()
        .for_each(move |event| {
            if let Ok(event) = event {
                listed.on_event(&event);
            }
            async {}
        });
    tokio::spawn(watch);
    (store, synced)
}

/// The webhook is ready once its Recipe and Edge caches have their first lists: before,
/// every new attempt would wait on a live read. The sealing keys are loaded before the
/// port opens, so they need no flag. It is not ready from SIGTERM on, so the endpoints
/// drop it while it still serves.
struct ServingReadiness {
    recipes: Arc<Synced>,
    edges: Arc<Synced>,
    stopping: AtomicBool,
}

impl admin::Readiness for ServingReadiness {
    fn check(&self) -> Result<String, String> {
        if self.stopping.load(Ordering::Acquire) {
            Err("stopping: serving the requests that still arrive, then draining".into())
        } else if self.recipes.is_set() && self.edges.is_set() {
            Ok("sealing keys loaded, Recipe and Edge caches warm".into())
        } else {
            Err("the Recipe and Edge caches are still syncing".into())
        }
    }
}
