//! The clock every timestamp comes from, and how Kubernetes prints timestamps.
//!
//! In-process runs put every component on one tokio runtime with the clock paused; a clock that
//! follows tokio time then gives virtual, deterministic timestamps, and the API server and the
//! controllers share it so that what they write agrees. Against a real cluster it is the wall
//! clock.

use jiff::{Timestamp, Unit};
use std::sync::Arc;
use tokio::time::Instant;

/// A source of wall-clock time. Cheap to clone; clones read the same time.
#[derive(Clone)]
pub struct Clock(Source);

#[derive(Clone)]
enum Source {
    /// `origin_wall` at tokio's `origin`, advancing with tokio time (virtual when paused).
    FollowingTokio { origin_wall: Timestamp, origin: Instant },
    /// The system's wall clock.
    System,
    /// Whatever the function says (for example another component's clock).
    Function(Arc<dyn Fn() -> Timestamp + Send + Sync>),
}

impl Clock {
    /// A clock that reads `start` now and advances with tokio time: under a paused runtime
    /// (`tokio::time::pause`) timestamps advance with virtual time, on a normal runtime with
    /// real time.
    pub fn following_tokio(start: Timestamp) -> Self {
        Clock(Source::FollowingTokio { origin_wall: start, origin: Instant::now() })
    }

    /// The system wall clock.
    pub fn system() -> Self {
        Clock(Source::System)
    }

    /// A clock that asks `now` for the time.
    pub fn from_fn(now: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        Clock(Source::Function(Arc::new(now)))
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        match &self.0 {
            Source::FollowingTokio { origin_wall, origin } => {
                let elapsed = Instant::now().saturating_duration_since(*origin);
                let elapsed = jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX);
                origin_wall.checked_add(elapsed).unwrap_or(*origin_wall)
            }
            Source::System => Timestamp::now(),
            Source::Function(now) => now(),
        }
    }

    /// The current time as a `metav1.Time` string (RFC 3339, whole seconds, UTC).
    pub fn now_rfc3339(&self) -> String {
        format_time(self.now())
    }

    /// The current time as a `metav1.MicroTime` string (RFC 3339 with microseconds).
    pub fn now_micro(&self) -> String {
        format_micro_time(self.now())
    }
}

impl Default for Clock {
    /// The system wall clock.
    fn default() -> Self {
        Self::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Clock").field(&self.now()).finish()
    }
}

/// A timestamp as a `metav1.Time` string: RFC 3339 in UTC, whole seconds (truncated).
pub fn format_time(t: Timestamp) -> String {
    Timestamp::from_second(t.as_second()).unwrap_or(t).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A timestamp as a `metav1.MicroTime` string: RFC 3339 in UTC with six fractional digits.
pub fn format_micro_time(t: Timestamp) -> String {
    t.round(Unit::Microsecond).unwrap_or(t).strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn epoch() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_tokio_clock_moves_with_virtual_time() {
        let clock = Clock::following_tokio(epoch());
        assert_eq!(clock.now_rfc3339(), "2026-01-01T00:00:00Z");
        tokio::time::sleep(Duration::from_millis(90_500)).await;
        assert_eq!(clock.now_rfc3339(), "2026-01-01T00:01:30Z");
        assert_eq!(clock.now_micro(), "2026-01-01T00:01:30.500000Z");
        let copy = clock.clone();
        assert_eq!(copy.now(), clock.now());
    }

    #[test]
    fn a_function_clock_asks_the_function() {
        let clock = Clock::from_fn(epoch);
        assert_eq!(clock.now(), epoch());
        assert_eq!(format!("{clock:?}"), "Clock(2026-01-01T00:00:00Z)");
    }

    #[test]
    fn timestamps_print_like_metav1() {
        let t: Timestamp = "2026-03-04T05:06:07.891234567Z".parse().unwrap();
        assert_eq!(format_time(t), "2026-03-04T05:06:07Z");
        assert_eq!(format_micro_time(t), "2026-03-04T05:06:07.891235Z");
    }
}
