//! Knob steps on the upstream backend: the simulated components' knobs as on the fake backend,
//! and the two knobs of the KubeRay operator, turned on its real process — `paused` stops it and
//! starts it again when unpaused, and `restart` starts a new process (new caches, and a new random
//! suffix for the names it draws). Not SIGSTOP: a frozen process resumes with each informer's watch
//! stream delivering its backlog on its own, so it may reconcile an object before an older write
//! to another kind reaches its cache; a process that starts lists everything before it
//! reconciles, which is what "the operator was stopped and came back" means.
//! Rows that turn knobs run on a plane of their own, so no other row sees the operator paused.

use crate::actors::ActorSet;
use crate::backend::upstream::plane::{ControlPlane, RAY_OPERATOR};
use crate::engine::runner::Knobs;
use crate::suite::ActorName;
use serde_json::Value;
use std::sync::Arc;

/// The knobs of one plane: its simulated actors' and its real KubeRay operator's.
pub struct PlaneKnobs {
    /// The simulated actors.
    pub sims: Arc<ActorSet>,
    /// The plane whose operator process the `kuberay` knobs turn.
    pub plane: Arc<parking_lot::Mutex<Option<ControlPlane>>>,
}

impl Knobs for PlaneKnobs {
    fn turn(&self, actor: ActorName, knob: &str, value: &Value) -> Result<(), String> {
        if actor != ActorName::Kuberay || self.sims.names().contains(&actor) {
            return self.sims.turn(actor, knob, value);
        }
        let mut plane = self.plane.lock();
        let plane = plane.as_mut().ok_or("the control plane was stopped")?;
        match (knob, value) {
            ("paused", Value::Bool(true)) => plane.stop_component(RAY_OPERATOR).map(|_| ()).map_err(|e| e.to_string()),
            ("paused", Value::Bool(false)) => plane.start_component(RAY_OPERATOR).map_err(|e| e.to_string()),
            ("paused", other) => Err(format!("knob paused takes true or false, not {other}")),
            ("restart", Value::Bool(true)) => match plane.restart(RAY_OPERATOR) {
                Ok(false) => Ok(()),
                Ok(true) => {
                    tracing::warn!("the KubeRay operator had to be killed to restart");
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            },
            ("restart", other) => Err(format!("knob restart takes true, not {other}")),
            (other, _) => Err(format!("the KubeRay operator has no knob {other:?} (it has: paused, restart)")),
        }
    }
}
