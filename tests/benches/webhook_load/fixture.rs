//! A control plane of its own with the real webhook registered, a recipe, edges, a grant,
//! and Workspaces in the states the load scenarios need.

use std::path::Path;

use anyhow::Context;
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use providers_shared::api::{Edge, Recipe, RecipeSpec, ValueField, Workspace};
use providers_tests::{Supervised, User, fixtures, platform, webhook::Webhook};
use serde_json::json;

pub use providers_tests::fixtures::REPOSITORY;
pub const NAMESPACE: &str = "org-a";

/// Fields drop in order: the webhook stops before the control plane goes.
pub struct Fixture {
    pub webhook: Webhook,
    pub plane: Supervised,
    pub admin: Client,
    pub alice: Client,
}

impl Fixture {
    pub async fn start(controlplane_bin: &Path) -> anyhow::Result<Self> {
        let plane = Supervised::start(controlplane_bin, "webhook-bench")?;
        platform::install(&plane.info)?;
        // As it ships: the tests' short window of seals without a mark is theirs.
        let mut webhook = Webhook::prepare(&plane.info, &[REPOSITORY])?;
        webhook.without_flag("--plan-values-mark-window");
        webhook.spawn().context(
            "starting the webhook (build it first: cargo build --release -p providers-webhook)",
        )?;
        let admin = plane.info.client(User::Admin).await?;
        let alice = plane.info.client(User::Alice).await?;
        Api::<Recipe>::all(admin.clone())
            .create(&PostParams::default(), &recipe())
            .await
            .context("recipe")?;
        for name in ["edge-1", "edge-2"] {
            Api::<Edge>::all(admin.clone())
                .create(&PostParams::default(), &edge(name))
                .await
                .context("edge")?;
        }
        platform::grant_install(&admin, "alice", "edge-1").await?;
        webhook.register(&plane.info).await?;
        Ok(Self {
            webhook,
            plane,
            admin,
            alice,
        })
    }

    fn workspaces(&self, client: &Client) -> Api<Workspace> {
        Api::namespaced(client.clone(), NAMESPACE)
    }

    /// Alice creates a Workspace through the API server (and so through the webhooks).
    pub async fn create(&self, name: &str) -> anyhow::Result<Workspace> {
        self.workspaces(&self.alice)
            .create(&PostParams::default(), &workspace(name))
            .await
            .with_context(|| format!("creating workspace {name}"))
    }

    /// Records a terminal result for the current attempt, as the installer does.
    pub async fn finish(&self, name: &str, result: &str) -> anyhow::Result<Workspace> {
        let api = self.workspaces(&self.admin);
        let ws = api.get(name).await?;
        let plan = &ws
            .spec
            .plan
            .as_ref()
            .context("the workspace is not sealed")?
            .plan;
        // The attempt's number and ID, as the installer records them: a retry seals the
        // recorded attempt only.
        let status = json!({"status": {
            "attempt": plan.attempt, "attemptID": plan.attempt_id,
            "jobResult": result, "phase": result,
        }});
        Ok(api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await?)
    }

    /// The Workspace as stored, managed fields and all.
    pub async fn get(&self, name: &str) -> anyhow::Result<Workspace> {
        Ok(self.workspaces(&self.admin).get(name).await?)
    }

    /// Alice's merge patch of a Workspace.
    pub async fn patch(&self, name: &str, patch: &serde_json::Value) -> anyhow::Result<Workspace> {
        Ok(self
            .workspaces(&self.alice)
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await?)
    }

    /// The webhook's sealing key file, which the webhook itself reads.
    pub fn sealing_key_pem(&self) -> anyhow::Result<String> {
        let path = self.webhook.dir.path().join("sealing.pem");
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    }
}

pub fn recipe() -> Recipe {
    fixtures::recipe(
        "demo",
        RecipeSpec {
            values: Some(json!({"replicaCount": 1, "image": {"tag": "stable"}})),
            values_schema: vec![ValueField {
                description: Some("How many replicas".into()),
                ..fixtures::replica_count()
            }],
            ..fixtures::recipe_spec()
        },
    )
}

pub fn edge(name: &str) -> Edge {
    fixtures::edge(name)
}

/// What a tenant writes: recipe, edge and a value; the webhook adds the plan.
pub fn workspace(name: &str) -> Workspace {
    fixtures::workspace_in(
        NAMESPACE,
        name,
        fixtures::with_values(json!({"replicaCount": 2})),
    )
}
