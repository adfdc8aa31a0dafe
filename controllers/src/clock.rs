//! Where controllers read "now" from.
//!
//! In-process, the harness hands controllers the fake API server's clock (which follows paused
//! tokio time), so the timestamps a controller writes agree with the server's; against a real
//! cluster it is the wall clock.

use jiff::Timestamp;
use std::sync::Arc;

/// A source of wall-clock time shared by the controllers of one backend.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Timestamp + Send + Sync>);

impl Clock {
    /// The system wall clock.
    pub fn system() -> Self {
        Self(Arc::new(Timestamp::now))
    }

    /// A clock that reads `now` (for example the fake API server's virtual clock).
    pub fn from_fn(now: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        Self(Arc::new(now))
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        (self.0)()
    }

    /// The current time as a `metav1.Time` string (RFC 3339, whole seconds, UTC).
    pub fn now_rfc3339(&self) -> String {
        let t = self.now();
        Timestamp::from_second(t.as_second()).unwrap_or(t).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Clock").field(&self.now()).finish()
    }
}
