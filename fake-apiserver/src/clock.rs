//! The one clock every timestamp the server writes comes from.
//!
//! It follows tokio time, so under a paused runtime (`tokio::time::pause`) timestamps advance
//! with virtual time and a run is deterministic; on a normal runtime it is the wall clock.

use jiff::{Timestamp, Unit};
use std::time::Duration;
use tokio::time::Instant;

/// Wall-clock time derived from tokio's (possibly paused) monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin_wall: Timestamp,
    origin: Instant,
}

impl Clock {
    /// A clock that reads `start` now and advances with tokio time.
    pub fn starting_at(start: Timestamp) -> Self {
        Self { origin_wall: start, origin: Instant::now() }
    }

    /// A clock that starts at the current wall-clock time.
    pub fn system() -> Self {
        Self::starting_at(Timestamp::now())
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        let elapsed = Instant::now().saturating_duration_since(self.origin);
        let elapsed = jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX);
        self.origin_wall.checked_add(elapsed).unwrap_or(self.origin_wall)
    }

    /// The current time as a `metav1.Time` string (RFC 3339, whole seconds, UTC).
    pub fn now_rfc3339(&self) -> String {
        format_time(self.now())
    }

    /// The current time as a `metav1.MicroTime` string (RFC 3339 with microseconds).
    pub fn now_micro(&self) -> String {
        let t = self.now().round(Unit::Microsecond).unwrap_or(self.now());
        t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
    }

    /// Time elapsed on this clock since it was made.
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(self.origin)
    }
}

/// Formats a timestamp as a `metav1.Time` string.
pub fn format_time(t: Timestamp) -> String {
    let secs = t.as_second();
    Timestamp::from_second(secs).unwrap_or(t).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
