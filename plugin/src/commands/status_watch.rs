//! `status -w`: the Workspaces as `kubectl get -w` shows them: the list first, then a line
//! for every change, until Ctrl-C. A kube-runtime watcher follows them and resumes (or lists
//! again) after a dropped connection; an object whose resourceVersion was already printed
//! is not printed again.

use std::{collections::HashMap, io::Write, pin::pin};

use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::{
    ResourceExt,
    api::DynamicObject,
    runtime::{WatchStreamExt, watcher, watcher::Event},
};
use providers_shared::api::Workspace;

use crate::{
    cli::{OutputFormat, StatusArgs},
    commands::Ctx,
    objects::{self, Fetched},
    output::{Rendered, print},
    report::report,
    views::workspaces::{name_of, status_list},
    wait::is_final,
    watching,
};

pub async fn run(ctx: &Ctx, args: &StatusArgs) -> anyhow::Result<()> {
    let namespace = ctx.conn.namespace.clone();
    let scope = (!args.all_namespaces).then_some(namespace.as_str());
    let mut config = watching::watcher_config(ctx.conn.read_timeout);
    if let Some(name) = &args.name {
        config = config.fields(&format!("metadata.name={name}"));
    }
    if let Some(labels) = &args.selector.selector {
        config = config.labels(labels);
    }
    let api = watching::workspaces(&ctx.conn.client, scope);
    let mut changes = pin!(watcher(api, config).default_backoff());
    let mut interrupted = pin!(tokio::signal::ctrl_c());
    let mut printer = Printer {
        ctx,
        all_namespaces: args.all_namespaces,
        namespace,
        printed: HashMap::new(),
        lines: 0,
    };
    // The objects of the list the watch (re)started with, printed together once complete.
    let mut listing: Vec<DynamicObject> = Vec::new();
    let mut listed_once = false;
    loop {
        let event = tokio::select! {
            _ = &mut interrupted => return Ok(()),
            event = changes.next() => event,
        };
        match event {
            None => return Ok(()),
            Some(Ok(Event::Init)) => listing.clear(),
            Some(Ok(Event::InitApply(object))) => listing.push(object),
            Some(Ok(Event::InitDone)) => {
                let first = !listed_once;
                listed_once = true;
                printer.changed(std::mem::take(&mut listing), first)?;
            }
            Some(Ok(Event::Apply(object) | Event::Delete(object))) => {
                printer.changed(vec![object], false)?;
            }
            Some(Err(watch_error)) => {
                let error = anyhow::Error::from(watch_error);
                if is_final(&error) {
                    return Err(error);
                }
                // The watcher tries again after a pause; say why the lines stopped.
                ctx.note(&format!(
                    "watch interrupted, resuming: {}",
                    report(&error, Some(&ctx.conn.server)).message
                ));
            }
        }
    }
}

/// Prints what changed, each object once per resourceVersion.
struct Printer<'a> {
    ctx: &'a Ctx,
    all_namespaces: bool,
    namespace: String,
    /// The resourceVersion last printed, by namespace and name.
    printed: HashMap<(String, String), String>,
    /// How many times something was printed (the table header goes with the first).
    lines: usize,
}

impl Printer<'_> {
    fn changed(&mut self, objects: Vec<DynamicObject>, first: bool) -> anyhow::Result<()> {
        let mut fresh: Vec<Fetched<Workspace>> = Vec::new();
        for object in objects {
            let key = (object.namespace().unwrap_or_default(), object.name_any());
            let version = object.resource_version().unwrap_or_default();
            if self.printed.get(&key) == Some(&version) {
                continue;
            }
            self.printed.insert(key, version);
            fresh.push(objects::parse(object)?);
        }
        if fresh.is_empty() && !first {
            return Ok(());
        }
        objects::sort_by_namespace_and_name(&mut fresh);
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr().lock();
        let format = self.ctx.output();
        let tabular = format.is_table() || matches!(format, OutputFormat::CustomColumns(_));
        if tabular {
            let rendered = status_list(
                &fresh,
                self.all_namespaces,
                &self.namespace,
                Timestamp::now(),
            );
            let no_headers = self.ctx.global.no_headers || self.lines > 0;
            print(format, no_headers, &rendered, &mut out, &mut err)?;
        } else {
            for item in &fresh {
                if matches!(format, OutputFormat::Yaml) && self.lines > 0 {
                    out.write_all(b"---\n")?;
                }
                let one =
                    Rendered::text(item.raw.clone(), String::new(), vec![name_of(&item.typed)]);
                print(format, true, &one, &mut out, &mut err)?;
                self.lines += 1;
            }
        }
        if !fresh.is_empty() {
            self.lines += 1;
        }
        out.flush()?;
        Ok(())
    }
}
