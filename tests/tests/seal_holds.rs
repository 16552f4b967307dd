//! The seal holds at the admission layer, against the real API server and the real
//! `providers-webhook serve` process: only the API server gets answers; a retry never signs
//! a plan the webhook did not seal, nor one the platform has since withdrawn; hostile bodies
//! cost the webhook little; only the installer removes its finalizer; a dry run's plan says
//! so.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
    time::Duration,
};

use anyhow::{Context, bail, ensure};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use providers_shared::{
    api::{Edge, Recipe, Workspace},
    seal::Sealer,
};
use providers_tests::{
    ControlPlaneInfo, Supervised, User,
    fixtures::{self, REPOSITORY},
    kubeconfig, kubectl, platform, process, supervised,
    webhook::{SYSTEM_NAMESPACE, Webhook},
};
use rustls::{
    ClientConfig, RootCertStore,
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject},
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;

struct Fixture {
    plane: &'static ControlPlaneInfo,
    webhook: Webhook,
}

/// The webhook on the shared control plane of this test binary, registered, with a recipe
/// `demo` and an edge `edge-1` alice may install onto.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
        platform::install(plane).expect("install");
        let webhook = Webhook::start(plane, &[REPOSITORY]).expect("webhook starts");
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Runtime::new()
                        .expect("runtime")
                        .block_on(catalog(plane, &webhook))
                })
                .join()
        })
        .expect("set-up thread")
        .expect("catalog");
        Fixture { plane, webhook }
    })
}

/// The recipe, the edge, alice's grant, and the webhook registered on `plane`.
async fn catalog(plane: &ControlPlaneInfo, webhook: &Webhook) -> anyhow::Result<()> {
    let admin = plane.client(User::Admin).await?;
    Api::<Recipe>::all(admin.clone())
        .create(&PostParams::default(), &recipe())
        .await?;
    Api::<Edge>::all(admin.clone())
        .create(&PostParams::default(), &edge())
        .await?;
    platform::grant_install(&admin, "alice", "edge-1").await?;
    webhook.register(plane).await
}

fn recipe() -> Recipe {
    fixtures::recipe("demo", fixtures::recipe_spec())
}

fn edge() -> Edge {
    fixtures::edge("edge-1")
}

fn workspace(name: &str, values: Value) -> Workspace {
    fixtures::workspace_in("org-a", name, fixtures::with_values(values))
}

fn denial<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected a denial, got {other:?}"),
    }
}

/// Records a terminal result as the installer does (number, ID and result).
async fn finish(api: &Api<Workspace>, name: &str, result: &str) -> anyhow::Result<()> {
    let ws = api.get(name).await?;
    let plan = &ws.spec.plan.context("sealed")?.plan;
    let status = json!({"status": {
        "attempt": plan.attempt, "attemptID": plan.attempt_id,
        "jobResult": result, "phase": "Failed",
    }});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

// ---- who gets answers -------------------------------------------------------------------

/// What a raw HTTPS request to the webhook got back.
#[derive(Debug)]
enum Reply {
    /// The connection ended without an HTTP answer (refused during the handshake).
    Nothing(String),
    Http {
        status: u16,
        body: String,
    },
}

/// POSTs `body` to the webhook at `path`, presenting `client` (certificate and key files)
/// or no certificate.
async fn post(
    webhook: &Webhook,
    client: Option<(&Path, &Path)>,
    path: &str,
    body: &[u8],
) -> anyhow::Result<Reply> {
    post_to(webhook.port, &webhook.ca_pem, client, path, body).await
}

/// POSTs `body` to the webhook on 127.0.0.1:`port`, whose serving certificate `ca_pem`
/// signed.
async fn post_to(
    port: u16,
    ca_pem: &str,
    client: Option<(&Path, &Path)>,
    path: &str,
    body: &[u8],
) -> anyhow::Result<Reply> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots);
    let mut config = match client {
        Some((cert, key)) => builder.with_client_auth_cert(
            CertificateDer::pem_file_iter(cert)?.collect::<Result<Vec<_>, _>>()?,
            PrivateKeyDer::from_pem_file(key)?,
        )?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let mut tls = match TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost")?, tcp)
        .await
    {
        Ok(tls) => tls,
        Err(error) => return Ok(Reply::Nothing(error.to_string())),
    };
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    // A server that refuses a body may answer before reading it all: a failed write still
    // leaves its answer to read.
    let written = match tls.write_all(head.as_bytes()).await {
        Ok(()) => tls.write_all(body).await,
        Err(error) => Err(error),
    };
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), tls.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let Some(rest) = text.strip_prefix("HTTP/1.1 ") else {
        return Ok(Reply::Nothing(format!("{written:?} {read:?}: {text}")));
    };
    let status = rest.get(..3).context("status")?.parse()?;
    let (headers, body) = rest.split_once("\r\n\r\n").unwrap_or((rest, ""));
    let body = if headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok(Reply::Http { status, body })
}

fn dechunk(mut text: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        text = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// An AdmissionReview of a Workspace write, with `object` as raw JSON text.
/// The AdmissionReview the webhook answers to a POST of `body` to /mutate made with the
/// API server's client certificate (HTTP 200).
async fn answer_to_the_api_server(
    plane: &ControlPlaneInfo,
    webhook: &Webhook,
    body: &[u8],
) -> anyhow::Result<Value> {
    let reply = post(
        webhook,
        Some((
            &plane.webhook_client_cert_file,
            &plane.webhook_client_key_file,
        )),
        "/mutate",
        body,
    )
    .await?;
    match reply {
        Reply::Http { status: 200, body } => Ok(serde_json::from_str(&body)?),
        Reply::Http { status, body } => bail!("HTTP {status} for the API server: {body}"),
        Reply::Nothing(why) => bail!("the API server's certificate should be answered: {why}"),
    }
}

fn review(operation: &str, user: &str, groups: &[&str], object: &str) -> Vec<u8> {
    let head = json!({
        "uid": "3d9a1f0e-hostile",
        "kind": {"group": "providers.platform.dev", "version": "v1alpha1", "kind": "Workspace"},
        "resource": {"group": "providers.platform.dev", "version": "v1alpha1", "resource": "workspaces"},
        "namespace": "org-a", "name": "w", "operation": operation,
        "userInfo": {"username": user, "groups": groups},
        "dryRun": false,
    })
    .to_string();
    // The request's fields without its closing brace: the object follows, as raw text.
    let head = &head[..head.len() - 1];
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{head},"object":{object},"oldObject":null}}}}"#
    )
    .into_bytes()
}

fn workspace_json(values: &str) -> String {
    format!(
        r#"{{"apiVersion":"providers.platform.dev/v1alpha1","kind":"Workspace","metadata":{{"name":"w","namespace":"org-a"}},"spec":{{"recipe":"demo","edge":"edge-1","values":{values}}}}}"#
    )
}

/// Only the API server gets a sealed plan: an AdmissionReview that claims `system:masters`
/// gets no answer — no sealed plan — unless the caller presents the API server's client
/// certificate; a certificate from another CA, or from the same CA for another subject, is
/// refused as well.
#[tokio::test]
async fn only_the_api_server_gets_answers() -> anyhow::Result<()> {
    let Fixture { plane, webhook } = fixture();
    let forged = review(
        "CREATE",
        "mallory",
        &["system:masters"],
        &workspace_json("{}"),
    );
    let other_ca = providers_tests::pki::Authority::generate("other-ca")?;
    let impostor =
        other_ca.issue_client(providers_tests::controlplane::WEBHOOK_CLIENT_NAME, &[])?;
    let dir = tempfile::tempdir()?;
    let (cert, key) = (dir.path().join("c.crt"), dir.path().join("c.key"));
    std::fs::write(&cert, &impostor.cert_pem)?;
    std::fs::write(&key, &impostor.key_pem)?;
    let callers: [(&str, Option<(&Path, &Path)>); 3] = [
        ("no certificate", None),
        ("a certificate from another CA", Some((&cert, &key))),
        (
            "the right CA, another subject",
            Some((
                &plane.webhook_other_subject_cert_file,
                &plane.webhook_other_subject_key_file,
            )),
        ),
    ];
    for (who, client) in callers {
        for path in ["/mutate", "/validate"] {
            let reply = post(webhook, client, path, &forged).await?;
            ensure!(
                matches!(reply, Reply::Nothing(_)),
                "{who} got an answer from {path}: {reply:?}"
            );
        }
    }
    // The API server's certificate gets the decision (here: edge-1's RBAC says no for
    // mallory, whatever groups the body claims, because the SubjectAccessReview asks as
    // the user the review names — and only the API server names users).
    let answer = answer_to_the_api_server(
        plane,
        webhook,
        &review("CREATE", "alice", &["tenants"], &workspace_json("{}")),
    )
    .await?;
    ensure!(answer["response"]["allowed"] == true, "{answer}");
    Ok(())
}

/// A requester whose identity is larger than any an authenticator gives a person (a 4 MiB
/// name, more than the API server takes in the RBAC question itself) is refused before
/// RBAC is asked or anything sealed, with a denial that names request.userInfo and says
/// what to do; sent straight to the webhook with the API server's certificate.
#[tokio::test]
async fn a_requester_too_large_to_seal_is_refused_before_rbac_is_asked() -> anyhow::Result<()> {
    let Fixture { plane, webhook } = fixture();
    let name = "a".repeat(4 << 20);
    let answer = answer_to_the_api_server(
        plane,
        webhook,
        &review("CREATE", &name, &["tenants"], &workspace_json("{}")),
    )
    .await?;
    let message = answer["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    ensure!(answer["response"]["allowed"] == false, "{answer}");
    ensure!(
        answer["response"]["status"]["reason"] == "RequesterTooLarge"
            && answer["response"]["status"]["code"] == 422,
        "{answer}"
    );
    ensure!(
        message.starts_with("request.userInfo: ")
            && message.contains("at most 1024 are sealed")
            && message.contains("fewer groups"),
        "{message}"
    );
    ensure!(message.len() < 1_000, "bounded: {} bytes", message.len());
    Ok(())
}

/// A tenant's Workspace within the API server's 3 MiB request limit whose review is over
/// the webhook's 6 MiB (the API server's JSON writes each `&` in six bytes) gets a denial
/// the tenant reads, not the API server's 500 for a webhook that answered a bare 413.
#[tokio::test]
async fn a_review_too_large_to_read_is_a_denial_the_tenant_reads() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let alice: Api<Workspace> = Api::namespaced(plane.client(User::Alice).await?, "org-a");
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let escaped = "&".repeat(2_800_000);
    let status = denial(
        alice
            .create(&dry_run, &workspace("escaped", json!({ "a": escaped })))
            .await,
    );
    ensure!(status.code == 413, "{status:?}");
    ensure!(
        status
            .message
            .contains("larger than the 6 MiB this webhook reads")
            && status.message.contains("send a smaller one"),
        "{}",
        status.message
    );
    Ok(())
}

// ---- what a body costs --------------------------------------------------------------------

/// Hostile input neither crashes nor bloats the webhook: hostile bodies — sent by a tenant
/// through the API server, and straight to the webhook with the API server's certificate —
/// get a clean 4xx or a denial, and the webhook's peak resident memory stays under 64 MiB.
#[tokio::test]
async fn hostile_bodies_cost_the_webhook_little() -> anyhow::Result<()> {
    let Fixture { plane, webhook } = fixture();
    let pid = process::webhook_pid(webhook.port)?;

    // The shape that once cost hundreds of MB: one long key over a couple of thousand
    // leaves, ~220 KB, as a tenant's server-side dry run through the API server.
    let long = "k".repeat(100);
    let leaves: serde_json::Map<String, Value> = (0..2_000)
        .map(|i| (format!("{long}{i:05}"), json!(i)))
        .collect();
    let alice: Api<Workspace> = Api::namespaced(plane.client(User::Alice).await?, "org-a");
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let status = denial(
        alice
            .create(
                &dry_run,
                &workspace("hostile", json!({ long.clone(): leaves.clone() })),
            )
            .await,
    );
    ensure!(status.message.contains("spec.values"), "{}", status.message);
    ensure!(
        status.message.len() < 2_000,
        "bounded: {}",
        status.message.len()
    );

    let api_server = Some((
        plane.webhook_client_cert_file.as_path(),
        plane.webhook_client_key_file.as_path(),
    ));
    let object = |values: &str| review("CREATE", "alice", &["tenants"], &workspace_json(values));
    let nested = format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
    let array = format!("{{\"a\":[{}0]}}", "0,".repeat(1_000_000));
    let many = format!(
        "{{{}\"z\":0}}",
        (0..200_000)
            .map(|i| format!("\"k{i}\":0,"))
            .collect::<String>()
    );
    let long_key = format!("{{\"{}\":1}}", "k".repeat(1_000_000));
    let mut non_utf8 = object("{\"a\":\"xx\"}");
    let at = non_utf8
        .windows(2)
        .position(|w| w == b"xx")
        .context("marker")?;
    non_utf8[at] = 0xff;
    non_utf8[at + 1] = 0xfe;
    let duplicate = review(
        "CREATE",
        "alice",
        &["tenants"],
        r#"{"apiVersion":"providers.platform.dev/v1alpha1","kind":"Workspace","metadata":{"name":"w","namespace":"org-a"},"spec":{"recipe":"demo","recipe":"evil","edge":"edge-1"}}"#,
    );
    let long_name = review(
        "CREATE",
        "alice",
        &["tenants"],
        &format!(
            r#"{{"apiVersion":"providers.platform.dev/v1alpha1","kind":"Workspace","metadata":{{"name":"w","namespace":"org-a"}},"spec":{{"recipe":"{}","edge":"edge-1"}}}}"#,
            "r".repeat(500_000)
        ),
    );
    let mut oversized = b"{\"pad\":\"".to_vec();
    oversized.resize(9 * 1024 * 1024, b'a');
    // (what, body, HTTP status, what the answer says on /mutate)
    let corpus: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "one long key over 2,000 leaves",
            object(&serde_json::to_string(&json!({ long: leaves }))?),
            200,
            "spec.values takes more than 32768 bytes",
        ),
        (
            "10,000 levels of nesting",
            object(&nested),
            200,
            "nests deeper than 32 levels",
        ),
        (
            "an array of a million items",
            object(&array),
            200,
            "more than 20000 entries",
        ),
        (
            "200,000 keys",
            object(&many),
            200,
            "more than 20000 entries",
        ),
        (
            "a key of a million bytes",
            object(&long_key),
            200,
            "a key longer than 1024 bytes",
        ),
        (
            "bytes that are not UTF-8",
            non_utf8,
            400,
            "not a JSON AdmissionReview",
        ),
        (
            "a duplicate key",
            duplicate,
            200,
            "duplicate field `recipe`",
        ),
        (
            "a recipe name of 500,000 bytes",
            long_name,
            200,
            "spec.recipe: \"rrrr",
        ),
        ("a body over the size limit", oversized, 413, ""),
    ];
    for (what, body, expected, says) in &corpus {
        for path in ["/mutate", "/validate"] {
            let (status, body) = match post(webhook, api_server, path, body).await? {
                Reply::Http { status, body } => (status, body),
                Reply::Nothing(why) => bail!("{what} to {path}: no answer: {why}"),
            };
            ensure!(
                status == *expected,
                "{what} to {path}: HTTP {status}: {body}"
            );
            ensure!(
                body.len() < 2_000,
                "{what} to {path}: {} bytes back",
                body.len()
            );
            let text = if status == 200 {
                let answer: Value = serde_json::from_str(&body)
                    .with_context(|| format!("{what} to {path}: {body}"))?;
                ensure!(
                    answer["response"]["allowed"] == false,
                    "{what} to {path} was admitted: {answer}"
                );
                answer["response"]["status"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            } else {
                body
            };
            // /validate refuses a plan-less object before it looks at values; /mutate
            // says what it found.
            if path == "/mutate" {
                ensure!(text.contains(says), "{what}: {text}");
            }
        }
    }
    let (peak, now) = process::memory_kib(pid)?;
    eprintln!("the webhook's resident memory after the corpus: peak {peak} KiB, now {now} KiB");
    ensure!(
        peak < 64 * 1024,
        "the webhook's peak resident memory reached {peak} KiB (now {now} KiB)"
    );
    Ok(())
}

/// Stalled or flooding connections do not starve the API server's reviews: a crowd of
/// strangers who open connections and stall in the TLS handshake, from two hundred
/// addresses, then eight callers with the API server's certificate who send 3 MB reviews at
/// once: the webhook stays up, answers the API server's certificate when the crowd is gone,
/// answers every large review, and its peak resident memory grows by a few MiB for the
/// crowd and by less than 24 MiB for the reviews. A webhook of its own, so the other tests'
/// API server calls are not in the crowd.
#[tokio::test]
async fn a_crowd_of_strangers_and_large_bodies_cost_the_webhook_little() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let webhook = tokio::task::spawn_blocking(|| Webhook::start(plane, &[REPOSITORY])).await??;
    let pid = process::webhook_pid(webhook.port)?;
    let (at_start, _) = process::memory_kib(pid)?;
    let api_server = Some((
        plane.webhook_client_cert_file.as_path(),
        plane.webhook_client_key_file.as_path(),
    ));

    // 200 addresses × 20 connections, each sending the first bytes of a TLS record that
    // announces 16 KiB and then nothing.
    let target = std::net::SocketAddr::from(([127, 0, 0, 1], webhook.port));
    let mut crowd = Vec::new();
    for peer in 0..200u16 {
        let source = [127, 0, 1 + (peer / 250) as u8, 1 + (peer % 250) as u8];
        for _ in 0..20 {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(std::net::SocketAddr::from((source, 0)))?;
            let Ok(mut tcp) = socket.connect(target).await else {
                continue;
            };
            let _ = tcp.write_all(&[0x16, 0x03, 0x01, 0x40, 0x00, 0x01]).await;
            crowd.push(tcp);
        }
    }
    let (peak_in_crowd, _) = process::memory_kib(pid)?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(crowd);

    // When the crowd has gone, the API server's certificate is answered again.
    let mut answered = false;
    for _ in 0..50 {
        let reply = post(
            &webhook,
            api_server,
            "/mutate",
            &review("CREATE", "alice", &["tenants"], &workspace_json("{}")),
        )
        .await?;
        if matches!(reply, Reply::Http { status: 200, .. }) {
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ensure!(
        answered,
        "the webhook should answer the API server after the crowd"
    );

    // Eight 3 MB reviews at once: each is answered (a denial: values too large), while at
    // most --review-budget-mib of bodies are read and decoded at a time.
    let large = object_with_values(&format!("{{\"a\":\"{}\"}}", "x".repeat(3 << 20)));
    let mut sending = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let webhook_port = webhook.port;
        let body = large.clone();
        let ca = webhook.ca_pem.clone();
        let cert = plane.webhook_client_cert_file.clone();
        let key = plane.webhook_client_key_file.clone();
        sending.spawn(async move {
            post_to(webhook_port, &ca, Some((&cert, &key)), "/mutate", &body).await
        });
    }
    while let Some(sent) = sending.join_next().await {
        match sent?? {
            Reply::Http { status: 200, body } => {
                let answer: Value = serde_json::from_str(&body)?;
                ensure!(answer["response"]["allowed"] == false, "{answer}");
                let message = answer["response"]["status"]["message"]
                    .as_str()
                    .unwrap_or_default();
                ensure!(message.contains("spec.values"), "{message}");
            }
            other => bail!("a large review got {other:?}"),
        }
    }
    let (peak, now) = process::memory_kib(pid)?;
    eprintln!(
        "the webhook's resident memory: peak at start {at_start} KiB, during the crowd \
         {peak_in_crowd} KiB; after 8 concurrent 3 MB reviews peak {peak} KiB, now {now} KiB"
    );
    // The crowd costs its pending handshakes' buffers; the reviews, about three times the
    // review budget (8 MiB) at the most.
    ensure!(
        peak_in_crowd < at_start + 8 * 1024,
        "the crowd grew the webhook from {at_start} KiB to {peak_in_crowd} KiB"
    );
    ensure!(
        peak < at_start + 24 * 1024,
        "the large reviews grew the webhook from {at_start} KiB to {peak} KiB (now {now} KiB)"
    );
    Ok(())
}

/// Reviews in flight on one connection do not hold each other up (from an attacker's
/// review): large reviews that hold the review budget or wait for it, their bodies unread,
/// on the API server's one HTTP/2 connection, do not hold up a small review on that same
/// connection. The large bodies are sent only in part until the small review is answered,
/// so the large ones are certainly still in flight then.
#[tokio::test]
async fn large_reviews_on_one_connection_do_not_hold_up_a_small_one() -> anyhow::Result<()> {
    use http_body_util::channel::Channel;
    use hyper::{body::Bytes, client::conn::http2};
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let Fixture { plane, .. } = fixture();
    let webhook = tokio::task::spawn_blocking(|| Webhook::start(plane, &[REPOSITORY])).await??;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(webhook.ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let mut config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_client_auth_cert(
                CertificateDer::pem_file_iter(&plane.webhook_client_cert_file)?
                    .collect::<Result<Vec<_>, _>>()?,
                PrivateKeyDer::from_pem_file(&plane.webhook_client_key_file)?,
            )?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", webhook.port)).await?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let (sender, connection) = http2::handshake::<_, _, Channel<Bytes, std::convert::Infallible>>(
        TokioExecutor::new(),
        TokioIo::new(tls),
    )
    .await?;
    tokio::spawn(connection);
    let request = |length: usize, body: Channel<Bytes, std::convert::Infallible>| {
        http::Request::post(format!("https://localhost:{}/mutate", webhook.port))
            .header("content-type", "application/json")
            .header("content-length", length)
            .body(body)
    };
    let large = Bytes::from(object_with_values(&format!(
        "{{\"a\":\"{}\"}}",
        "x".repeat(3 << 20)
    )));
    let answered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut pending = tokio::task::JoinSet::new();
    let mut rests = Vec::new();
    for _ in 0..8 {
        let (mut body_sender, body) = Channel::new(1);
        let mut sender = sender.clone();
        let request = request(large.len(), body)?;
        let answered = answered.clone();
        pending.spawn(async move {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            anyhow::Ok(response.status().as_u16())
        });
        // The first 32 KiB now; the rest once the small review is answered.
        body_sender.send_data(large.slice(..32 << 10)).await?;
        rests.push(body_sender);
    }
    // Let the large ones take the budget and start their streams.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let small_body = Bytes::from(object_with_values("{}"));
    let (mut small_sender_body, body) = Channel::new(1);
    let mut small_sender = sender.clone();
    small_sender.ready().await?;
    let small = small_sender.send_request(request(small_body.len(), body)?);
    small_sender_body.send_data(small_body).await?;
    drop(small_sender_body);
    let small = tokio::time::timeout(Duration::from_secs(20), small)
        .await
        .context("the small review was held up by the large ones")??;
    ensure!(
        small.status() == 200,
        "the small review got {}",
        small.status()
    );
    let large_answered = answered.load(std::sync::atomic::Ordering::SeqCst);
    ensure!(
        large_answered == 0,
        "{large_answered} large reviews were answered before their bodies were sent"
    );
    for mut rest in rests {
        let large = large.clone();
        tokio::spawn(async move {
            for chunk in large[32 << 10..].chunks(256 << 10) {
                if rest.send_data(Bytes::copy_from_slice(chunk)).await.is_err() {
                    break;
                }
            }
        });
    }
    while let Some(status) = pending.join_next().await {
        ensure!(status?? == 200, "a large review was not answered");
    }
    Ok(())
}

fn object_with_values(values: &str) -> Vec<u8> {
    review("CREATE", "alice", &["tenants"], &workspace_json(values))
}

// ---- retries ---------------------------------------------------------------------------------

/// The webhook signs only plans it sealed, and only what the platform still offers: a plan
/// the webhook never sealed, stored while the webhook configurations were removed (and
/// refused by the installer), is never signed by a later retry; and a retry of what the
/// platform has since withdrawn is refused with what to do.
#[tokio::test]
async fn a_retry_never_signs_what_the_webhook_did_not_seal_or_the_platform_withdrew()
-> anyhow::Result<()> {
    // A control plane of its own: the webhook configurations come and go here.
    let plane = tokio::task::spawn_blocking(|| {
        Supervised::start(
            Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
            "retry-seal",
        )
    })
    .await??;
    let info = plane.info.clone();
    platform::install(&info)?;
    let webhook = Webhook::start(&info, &[REPOSITORY])?;
    catalog(&info, &webhook).await?;
    let admin: Api<Workspace> = Api::namespaced(info.client(User::Admin).await?, "org-a");
    let alice: Api<Workspace> = Api::namespaced(info.client(User::Alice).await?, "org-a");

    // The forged plan: attempt 2 with another key and the tenant's own chart values.
    alice
        .create(&PostParams::default(), &workspace("forged", json!({})))
        .await?;
    finish(&admin, "forged", "Failed").await?;
    Webhook::unregister(&info)?;
    let mut stored = alice.get("forged").await?;
    let mut plan = stored.spec.plan.clone().context("sealed")?.plan;
    plan.attempt = 2;
    plan.attempt_id = "forged-attempt-2".into();
    // Inline, as a plan from before values were stored by digest: the one form in which a
    // plan carries the values themselves.
    plan.values_digest = None;
    plan.values = Some(json!({"image": {"repository": "evil/image"}}));
    stored.spec.plan = Some(Sealer::from_seed([66; 32]).seal(plan)?);
    alice
        .replace("forged", &PostParams::default(), &stored)
        .await
        .context("stored while no webhook checked it")?;
    // With the webhooks gone, the API server still bounds a tenant's values: the CRD
    // schema at the top level, the providers-values-bounds policy below it.
    let mut deep = json!("leaf");
    for _ in 0..9 {
        deep = json!({ "a": deep });
    }
    let wide: serde_json::Map<String, Value> =
        (0..513).map(|i| (format!("k{i}"), json!(i))).collect();
    for (what, values, says) in [
        (
            "a 129-byte key",
            json!({ "k".repeat(129): 1 }),
            "providers-values-bounds",
        ),
        ("nine levels", deep, "providers-values-bounds"),
        ("a list", json!({"a": [1, 2]}), "providers-values-bounds"),
        (
            "513 keys",
            Value::Object(wide),
            "must have at most 512 items",
        ),
    ] {
        let status = denial(
            alice
                .create(&PostParams::default(), &workspace("unbounded", values))
                .await,
        );
        ensure!(status.message.contains(says), "{what}: {}", status.message);
    }
    // What the installer records for it: attempt 2, refused for its seal.
    let rejected = json!({"status": {"attempt": 2, "attemptID": "forged-attempt-2",
                                     "jobResult": "Rejected", "phase": "Failed"}});
    admin
        .patch_status("forged", &PatchParams::default(), &Patch::Merge(&rejected))
        .await?;
    webhook.register(&info).await?;
    let status = denial(
        alice
            .patch(
                "forged",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"retry": 1}})),
            )
            .await,
    );
    ensure!(status.reason == "RetryOfUnverifiedPlan", "{status:?}");
    ensure!(
        status.message.contains("spec.retry: attempt 2"),
        "{}",
        status.message
    );
    ensure!(
        status.message.contains("not among the published keys"),
        "{}",
        status.message
    );
    // Changing the intent seals a new attempt from the current Recipe.
    let upgraded = alice
        .patch(
            "forged",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"values": {"replicaCount": 2}}})),
        )
        .await?;
    let plan = upgraded.spec.plan.context("sealed")?.plan;
    ensure!(
        plan.attempt == 3 && plan.values.is_none() && plan.values_digest.is_some(),
        "{plan:?}"
    );

    // A version the platform withdrew after the attempt failed.
    let mut pinned = workspace("withdrawn", json!({}));
    pinned.spec.version = Some("0.1.0".into());
    alice.create(&PostParams::default(), &pinned).await?;
    finish(&admin, "withdrawn", "Failed").await?;
    Api::<Recipe>::all(info.client(User::Admin).await?)
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"versions": ["0.2.0"]}})),
        )
        .await?;
    // The webhook reads Recipes from its watch cache: a withdrawal holds from the moment it
    // has seen the change, which a loaded machine can delay. Dry runs find that moment
    // without storing a retry.
    let retry = json!({"spec": {"retry": 1}});
    providers_tests::installer::eventually(
        "the webhook to see the withdrawal",
        Duration::from_secs(20),
        || async {
            let dry_run = PatchParams {
                dry_run: true,
                ..Default::default()
            };
            match alice
                .patch("withdrawn", &dry_run, &Patch::Merge(&retry))
                .await
            {
                Err(kube::Error::Api(status)) if status.reason == "RetryWithdrawn" => Ok(Some(())),
                Ok(_) => Ok(None),
                Err(error) => Err(error.into()),
            }
        },
    )
    .await?;
    let status = denial(
        alice
            .patch(
                "withdrawn",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"retry": 1}})),
            )
            .await,
    );
    ensure!(status.reason == "RetryWithdrawn", "{status:?}");
    ensure!(
        status
            .message
            .contains("no longer offers version \"0.1.0\"")
            && status.message.contains("change the intent"),
        "{}",
        status.message
    );
    let moved = alice
        .patch(
            "withdrawn",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"version": "0.2.0"}})),
        )
        .await?;
    ensure!(moved.spec.plan.context("sealed")?.plan.version == "0.2.0");
    drop(webhook);
    plane.stop()?;
    Ok(())
}

// ---- dry runs ----------------------------------------------------------------------------

/// A dry-run seal is never run: a plan sealed for a server-side dry run says so (and when
/// it was sealed), so neither the webhook nor the installer ever runs it.
#[tokio::test]
async fn a_dry_runs_plan_says_it_is_one() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let alice: Api<Workspace> = Api::namespaced(plane.client(User::Alice).await?, "org-a");
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let shown = alice
        .create(&dry_run, &workspace("dry", json!({"replicaCount": 2})))
        .await?;
    let plan = shown.spec.plan.context("sealed")?.plan;
    ensure!(plan.dry_run, "a dry run's plan is marked");
    ensure!(plan.sealed_at.is_some(), "and carries its seal time");
    let real = alice
        .create(&PostParams::default(), &workspace("not-dry", json!({})))
        .await?;
    let plan = real.spec.plan.context("sealed")?.plan;
    ensure!(!plan.dry_run);
    Ok(())
}

// ---- the finalizer -----------------------------------------------------------------------

/// Only the installer removes its finalizer: a tenant cannot remove the installer's
/// finalizer (a metadata-only write the webhooks never see); the installer's own
/// ServiceAccount can.
#[tokio::test]
async fn only_the_installer_removes_its_finalizer() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let alice: Api<Workspace> = Api::namespaced(plane.client(User::Alice).await?, "org-a");
    alice
        .create(&PostParams::default(), &workspace("fenced", json!({})))
        .await?;
    let installer = installer_client(plane).await?;
    let as_installer: Api<Workspace> = Api::namespaced(installer, "org-a");
    let add = json!({"metadata": {"finalizers": ["providers.platform.dev/installer"]}});
    as_installer
        .patch("fenced", &PatchParams::default(), &Patch::Merge(&add))
        .await?;
    let status = denial(
        alice
            .patch(
                "fenced",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await,
    );
    ensure!(status.code == 403, "{status:?}");
    ensure!(
        status
            .message
            .contains("only the providers installer removes"),
        "{}",
        status.message
    );
    alice
        .delete("fenced", &Default::default())
        .await
        .context("a tenant may still delete")?;
    ensure!(
        alice
            .get("fenced")
            .await?
            .metadata
            .deletion_timestamp
            .is_some(),
        "deletion waits for the installer"
    );
    as_installer
        .patch(
            "fenced",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .context("the installer removes it")?;
    Ok(())
}

/// A client acting as the installer's shipped ServiceAccount (manifests/controller/rbac.yaml).
async fn installer_client(plane: &ControlPlaneInfo) -> anyhow::Result<Client> {
    let root = providers_tests::binaries::workspace_root()?;
    let manifest = root.join("manifests/controller/rbac.yaml");
    kubectl::ok(
        plane.kubeconfig(User::Admin),
        &[
            "apply",
            "--server-side",
            "--field-manager=platform",
            "-f",
            &manifest.display().to_string(),
        ],
    )?;
    let token = kubectl::ok(
        plane.kubeconfig(User::Admin),
        &[
            "create",
            "token",
            "providers-controller",
            "-n",
            SYSTEM_NAMESPACE,
        ],
    )?;
    let dir = tempfile::tempdir()?;
    let path: PathBuf = dir.path().join("installer.kubeconfig");
    kubeconfig::write(
        &path,
        &plane.name,
        &plane.server,
        &plane.ca_pem()?,
        "providers-controller",
        token.trim(),
        None,
    )?;
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&path)?,
        &Default::default(),
    )
    .await?;
    Ok(Client::try_from(config)?)
}
