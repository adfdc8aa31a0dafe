//! Knob steps on the upstream backend: the simulated components' knobs as on the fake backend,
//! and three knobs of the real operators (the KubeRay operator and Kueue), turned on their
//! processes:
//! - `paused` stops the process and starts it again when unpaused: a process that starts lists
//!   everything before it reconciles, which is what "the operator was stopped and came back"
//!   means;
//! - `restart` stops it and starts a new one (new caches, and a new random suffix for the names
//!   it draws);
//! - `frozen` sends SIGSTOP and, when unfrozen, SIGCONT: the process keeps its caches and
//!   connections, and each informer's watch then delivers its backlog on its own, so it may
//!   reconcile an object before an older write to another kind reaches its cache.
//!
//! Starting again waits until the operator's health endpoint answers ready (Kueue's webhooks
//! answer only then). kube-apiserver restarts the same way (`restart`; etcd keeps the data), and
//! waits for its `/readyz`. Rows that turn knobs run on a plane of their own, so no other row sees an
//! operator stopped.

use crate::actors::ActorSet;
use crate::backend::upstream::plane::{ControlPlane, KUBE_APISERVER, KUEUE, RAY_OPERATOR};
use crate::engine::runner::Knobs;
use crate::suite::ActorName;
use serde_json::Value;
use std::sync::Arc;

/// The knobs of one plane: its simulated actors' and its real operators'.
pub struct PlaneKnobs {
    /// The simulated actors.
    pub sims: Arc<ActorSet>,
    /// The plane whose operator processes the knobs turn.
    pub plane: Arc<parking_lot::Mutex<Option<ControlPlane>>>,
}

/// The process of a real operator behind an actor, if one runs for it.
pub fn process_of(actor: ActorName) -> Option<&'static str> {
    match actor {
        ActorName::Kuberay => Some(RAY_OPERATOR),
        ActorName::Kueue => Some(KUEUE),
        ActorName::KubeApiserver => Some(KUBE_APISERVER),
        _ => None,
    }
}

impl Knobs for PlaneKnobs {
    fn turn(&self, actor: ActorName, knob: &str, value: &Value) -> Result<(), String> {
        let process = match process_of(actor) {
            Some(p) if !self.sims.names().contains(&actor) => p,
            _ => return self.sims.turn(actor, knob, value),
        };
        let mut plane = self.plane.lock();
        let plane = plane.as_mut().ok_or("the control plane was stopped")?;
        if actor == ActorName::KubeApiserver && knob != "restart" {
            return Err(format!("kube-apiserver has no knob {knob:?} (it has: restart)"));
        }
        let flag = |v: &Value| v.as_bool().ok_or_else(|| format!("knob {knob} takes true or false, not {v}"));
        match knob {
            "paused" if flag(value)? => plane.stop_component(process).map(|_| ()).map_err(|e| e.to_string()),
            "paused" => plane.start_component(process).map_err(|e| e.to_string()),
            "frozen" => plane.freeze_component(process, flag(value)?).map_err(|e| e.to_string()),
            "restart" if value == &Value::Bool(true) => match plane.restart(process) {
                Ok(false) => Ok(()),
                Ok(true) => {
                    tracing::warn!("{process} had to be killed to restart");
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            },
            "restart" => Err(format!("knob restart takes true, not {value}")),
            other => Err(format!("{actor} has no knob {other:?} (it has: paused, frozen, restart)")),
        }
    }
}
