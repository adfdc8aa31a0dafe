//! A tiny controller the harness's own tests run rows against, with a knob: it proves that
//! expectations pass when they should and fail, with a clear message, when they should not.

use crate::actors::{Actor, ActorFactory};
use crate::suite::{ActorName, Needs};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Label that makes the echo controller copy a ConfigMap.
pub const ECHO_LABEL: &str = "kproof.dev/echo";

/// Copies every ConfigMap labelled `kproof.dev/echo: "true"` to `<name>-echo`, `data.delay`
/// seconds (virtual time in-process) after it first sees it. Knob `paused: true` stops it.
pub struct EchoControllerFactory;

struct EchoController {
    paused: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for EchoController {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Actor for EchoController {
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String> {
        match (knob, value) {
            ("paused", Value::Bool(b)) => {
                self.paused.store(*b, Ordering::SeqCst);
                Ok(())
            }
            ("paused", other) => Err(format!("knob paused takes true or false, not {other}")),
            (other, _) => Err(format!("the echo controller has no knob {other:?} (it has: paused)")),
        }
    }
}

impl ActorFactory for EchoControllerFactory {
    fn name(&self) -> ActorName {
        ActorName::Echo
    }

    fn start(
        &self,
        client: kube::Client,
        _clock: controllers::Clock,
        _needs: &Needs,
        _: &controllers::sim::SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let paused = Arc::new(AtomicBool::new(false));
        let flag = paused.clone();
        let task = tokio::spawn(async move {
            let all: Api<ConfigMap> = Api::all(client.clone());
            let mut first_seen: BTreeMap<(String, String), tokio::time::Instant> = BTreeMap::new();
            loop {
                if !flag.load(Ordering::SeqCst)
                    && let Ok(list) = all.list(&ListParams::default().labels(&format!("{ECHO_LABEL}=true"))).await
                {
                    for cm in list.items {
                        let (Some(ns), Some(name)) = (cm.metadata.namespace.clone(), cm.metadata.name.clone()) else {
                            continue;
                        };
                        let seen =
                            *first_seen.entry((ns.clone(), name.clone())).or_insert_with(tokio::time::Instant::now);
                        let delay =
                            cm.data.as_ref().and_then(|d| d.get("delay")).and_then(|d| d.parse().ok()).unwrap_or(0);
                        if seen.elapsed() < Duration::from_secs(delay) {
                            continue;
                        }
                        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
                        let echo_name = format!("{name}-echo");
                        let mut echo = ConfigMap::default();
                        echo.metadata.name = Some(echo_name.clone());
                        echo.metadata.labels = Some([("kproof.dev/echo-of".to_string(), name.clone())].into());
                        echo.data = cm.data.clone();
                        match api.get_opt(&echo_name).await {
                            Ok(None) => {
                                tracing::info!(%ns, %name, "echo: creating {echo_name}");
                                let _ = api.create(&PostParams::default(), &echo).await;
                            }
                            Ok(Some(cur)) if cur.data != echo.data => {
                                tracing::info!(%ns, %name, "echo: updating {echo_name}");
                                echo.metadata.resource_version = cur.metadata.resource_version;
                                let _ = api.replace(&echo_name, &PostParams::default(), &echo).await;
                            }
                            _ => {}
                        }
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Ok(Box::new(EchoController { paused, task }))
    }
}
