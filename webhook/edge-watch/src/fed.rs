//! An edge's caches fed by hand, for unit tests of whole passes: each relist gives every
//! cache the events its watch gives when it lists (`Init`, an `InitApply` per object it
//! selects, `InitDone`), from the objects a test's API double holds. The watches
//! themselves are not run: their requests would come in at moments no test can order, and
//! each relist is a point in a test where the watches have caught up.

use std::collections::HashMap;

use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{Namespace, Secret, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Resource, ResourceExt,
    core::{PartialObjectMeta, PartialObjectMetaExt},
    runtime::watcher,
};
use providers_shared::installer::names;
use std::sync::{Arc, Mutex};

use super::{
    EdgeCache, NamespaceWatches, OwnEdgeWrites, Reachability, ReleaseObjects, WatchesListed,
    compact_meta::{CompactJob, CompactMeta},
    compact_store::{CompactWriter, compact_store},
};

type MetaWriter<K> = CompactWriter<PartialObjectMeta<K>, CompactMeta>;

/// What an edge's watches would have brought, given by the test.
#[derive(Default)]
pub struct Listed {
    pub namespaces: Vec<Namespace>,
    pub service_accounts: Vec<ServiceAccount>,
    pub roles: Vec<Role>,
    pub role_bindings: Vec<RoleBinding>,
    pub jobs: Vec<Job>,
    pub secrets: Vec<Secret>,
}

/// An edge's caches and the writers their watches would hold.
pub struct FedCache {
    pub cache: EdgeCache,
    namespaces: MetaWriter<Namespace>,
    service_accounts: MetaWriter<ServiceAccount>,
    roles: MetaWriter<Role>,
    role_bindings: MetaWriter<RoleBinding>,
    jobs: CompactWriter<Job, CompactJob>,
    /// The Secret watch of each namespace of the installer's, once listed.
    secrets: HashMap<String, MetaWriter<Secret>>,
}

impl Default for FedCache {
    fn default() -> Self {
        Self::new()
    }
}

impl FedCache {
    /// Empty caches whose watches have all listed once (nothing was there).
    pub fn new() -> Self {
        let (namespaces_store, namespaces) = compact_store(CompactMeta::of_partial::<Namespace>);
        let (service_accounts_store, service_accounts) =
            compact_store(CompactMeta::of_partial::<ServiceAccount>);
        let (roles_store, roles) = compact_store(CompactMeta::of_partial::<Role>);
        let (role_bindings_store, role_bindings) =
            compact_store(CompactMeta::of_partial::<RoleBinding>);
        let (jobs_store, jobs) = compact_store(CompactJob::new);
        let installer_namespaces = namespaces_store.clone();
        let listed = Arc::new(WatchesListed::default());
        listed.of(1);
        listed.one_more();
        let cache = EdgeCache {
            namespaces: namespaces_store,
            service_accounts: service_accounts_store,
            roles: roles_store,
            role_bindings: role_bindings_store,
            // No stream pool: no watch of a namespace's Secrets starts; `relist` makes them.
            namespaced: Arc::new(NamespaceWatches::new(
                None,
                Arc::new(Mutex::new(HashMap::new())),
                Arc::new(|_: &str| {}),
                Arc::new(move |namespace: &str| {
                    installer_namespaces.get(None, namespace, |_| ()).is_some()
                }),
            )),
            jobs: jobs_store,
            own: OwnEdgeWrites::new(),
            release_workspaces: Arc::new(Mutex::new(HashMap::new())),
            unreachable: Reachability::default(),
            listed,
            releases: ReleaseObjects::default(),
            identity: Arc::default(),
        };
        Self {
            cache,
            namespaces,
            service_accounts,
            roles,
            role_bindings,
            jobs,
            secrets: HashMap::new(),
        }
    }

    /// Every watch lists again from `listed`, selecting what the real one selects: the
    /// installer's objects by its `managed-by` label, and every Secret of the installer's
    /// namespaces. As a listing watch does, it says the edge answers again.
    pub fn relist(&mut self, listed: &Listed) {
        let namespaces: Vec<Namespace> = listed
            .namespaces
            .iter()
            .filter(|n| managed(*n))
            .cloned()
            .collect();
        list_meta(&mut self.namespaces, &namespaces);
        list_meta(
            &mut self.service_accounts,
            &managed_only(&listed.service_accounts),
        );
        list_meta(&mut self.roles, &managed_only(&listed.roles));
        list_meta(
            &mut self.role_bindings,
            &managed_only(&listed.role_bindings),
        );
        let jobs = managed_only(&listed.jobs);
        self.jobs.apply_watcher_event(&watcher::Event::Init);
        for job in jobs {
            self.jobs
                .apply_watcher_event(&watcher::Event::InitApply(job));
        }
        self.jobs.apply_watcher_event(&watcher::Event::InitDone);
        let names: Vec<String> = namespaces.iter().map(ResourceExt::name_any).collect();
        self.secrets
            .retain(|namespace, _| names.contains(namespace));
        self.cache
            .namespaced
            .keep_only(&names.iter().cloned().collect());
        for namespace in names {
            let writer = self
                .secrets
                .entry(namespace.clone())
                .or_insert_with(|| self.cache.namespaced.insert_listed(&namespace));
            let secrets: Vec<Secret> = listed
                .secrets
                .iter()
                .filter(|s| s.namespace().as_deref() == Some(namespace.as_str()))
                .cloned()
                .collect();
            list_meta(writer, &secrets);
        }
        self.cache.set_unreachable(None);
    }
}

fn managed<K: Resource>(object: &K) -> bool {
    object
        .meta()
        .labels
        .as_ref()
        .and_then(|l| l.get(names::LABEL_MANAGED_BY))
        .map(String::as_str)
        == Some(names::MANAGED_BY)
}

fn managed_only<K: Resource + Clone>(objects: &[K]) -> Vec<K> {
    objects.iter().filter(|o| managed(*o)).cloned().collect()
}

/// A metadata watch's list of `objects`.
fn list_meta<K: Resource<DynamicType = ()>>(writer: &mut MetaWriter<K>, objects: &[K]) {
    writer.apply_watcher_event(&watcher::Event::Init);
    for object in objects {
        let partial = object.meta().clone().into_response_partial::<K>();
        writer.apply_watcher_event(&watcher::Event::InitApply(partial));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
}
