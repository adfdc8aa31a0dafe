//! WATCH: newline-delimited JSON events read from the store's event log.
//!
//! A watch keeps a cursor (the last resourceVersion it has delivered) and, whenever the store
//! moves, copies the log entries after it under the read lock. Because every write appends to
//! the log under the write lock, a watch started from a LIST's resourceVersion sees exactly
//! the changes after that LIST, however many watchers run.

use super::super::query::{invalid_options, matches};
use super::super::request::Target;
use super::super::tables::{self, Rendering};
use super::super::{Context, ListenerStop};
use super::Call;
use crate::error::{ApiError, ApiResult};
use crate::registry::store::{served_as_stored, try_render, try_render_many};
use crate::storage::{Change, ChangeKind, StoredObject, read_rv};
use apimachinery::{FieldSelector, LabelSelector};
use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

/// Annotation on the bookmark that ends the initial events of a streaming list.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

struct Watcher {
    ctx: Arc<Context>,
    target: Target,
    labels: LabelSelector,
    fields: FieldSelector,
    cursor: u64,
    changed: watch::Receiver<u64>,
    stop: Option<watch::Receiver<bool>>,
    /// Changes when the server restarts, which ends the watch.
    restarted: watch::Receiver<u64>,
    bookmarks: bool,
    /// Ends the watch. One timer for the watch's life, not one per wait.
    deadline: Pin<Box<Sleep>>,
    /// Fires when the next BOOKMARK is due; reset after each.
    next_bookmark: Pin<Box<Sleep>>,
    pending: VecDeque<Bytes>,
    done: bool,
    /// How event objects are rendered (a one-row Table for `kubectl get -w`).
    rendering: Rendering,
    /// Whose watch this is (injected [`super::super::WatchLag`]s name a user).
    user: String,
    /// Events held back by an injected lag, oldest first, with when each is due.
    late: VecDeque<LateEvent>,
    /// The resourceVersion of the last event sent (bookmarks must not run ahead of events
    /// still held back, or a client resuming from one would miss them).
    delivered: u64,
}

/// An event an injected watch lag holds back.
struct LateEvent {
    due: Instant,
    resource_version: u64,
    frame: Bytes,
}

fn frame(out: &mut BytesMut, kind: &str, object: &[u8]) {
    out.reserve(kind.len() + object.len() + 24);
    out.put_slice(b"{\"type\":\"");
    out.put_slice(kind.as_bytes());
    out.put_slice(b"\",\"object\":");
    out.put_slice(object);
    out.put_slice(b"}\n");
}

fn value_frame(kind: &str, object: &Value) -> Bytes {
    let mut out = BytesMut::new();
    frame(&mut out, kind, &serde_json::to_vec(object).unwrap_or_default());
    out.freeze()
}

impl Watcher {
    /// An event object rendered as the watch asked (only called when not plain JSON).
    fn rendered(&self, object: &[u8]) -> Bytes {
        let v = tables::object_body(&self.rendering, &self.target.rt, object, self.ctx.clock.now());
        Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
    }

    fn in_scope(&self, o: &StoredObject) -> bool {
        self.target.namespace.is_empty() || o.namespace == self.target.namespace
    }

    fn selected(&self, o: &StoredObject) -> bool {
        self.in_scope(o) && matches(o, &self.labels, &self.fields)
    }

    /// The event a watcher with selectors sees for a change: an object that starts matching
    /// is ADDED, one that stops matching is DELETED.
    fn visible(&self, c: &Change) -> Option<ChangeKind> {
        let now = self.selected(&c.object);
        let before = c.previous.as_ref().is_some_and(|p| self.selected(p));
        match c.kind {
            ChangeKind::Added => now.then_some(ChangeKind::Added),
            ChangeKind::Deleted => (before || now).then_some(ChangeKind::Deleted),
            ChangeKind::Modified => match (before, now) {
                (true, true) => Some(ChangeKind::Modified),
                (false, true) => Some(ChangeKind::Added),
                (true, false) => Some(ChangeKind::Deleted),
                (false, false) => None,
            },
        }
    }

    /// Moves the cursor to the latest resourceVersion when nothing of this collection was
    /// written since it (and nothing is held back): a bookmark then says as much as one from a
    /// watch woken by every write would.
    fn fast_forward(&mut self) {
        if !self.late.is_empty() {
            return;
        }
        let st = self.ctx.state.read();
        if st.store.key_version(self.target.rt.storage_key()) <= self.cursor {
            self.cursor = st.store.resource_version;
            self.delivered = self.cursor;
        }
    }

    fn bookmark(&self, initial_end: bool) -> Bytes {
        let rv = if self.late.is_empty() { self.cursor } else { self.delivered };
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({INITIAL_EVENTS_END: "true"});
        }
        let rt = &self.target.rt;
        value_frame("BOOKMARK", &json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": meta}))
    }

    /// How late this watch's events about objects in `namespace` are (injected lags).
    fn lags(&self) -> Vec<(String, Duration)> {
        let lags = self.ctx.watch_lags.lock();
        lags.iter().filter(|l| l.user == self.user).map(|l| (l.namespace.clone(), l.delay)).collect()
    }

    /// Copies the log entries after the cursor: the ones due now as a chunk, the ones an
    /// injected lag holds back into `late`. `Err` when the cursor fell out of the window.
    fn catch_up(&mut self) -> Result<Option<Bytes>, ApiError> {
        let lags = self.lags();
        let now = Instant::now();
        let st = self.ctx.state.read();
        let key = self.target.rt.storage_key();
        if self.cursor < st.store.compacted {
            // A watch wakes only on writes of its own collection, so its cursor may trail the
            // window with nothing of its own missed: then it reads on from the window's start.
            if st.store.compacted_version(key) > self.cursor {
                return Err(ApiError::too_old_resource_version(self.cursor, st.store.compacted + 1));
            }
            self.cursor = st.store.compacted;
        }
        let mut out = BytesMut::new();
        for c in st.store.changes_after(self.cursor) {
            if &c.key != key {
                continue;
            }
            let Some(kind) = self.visible(c) else { continue };
            let rt = &self.target.rt;
            let lag = lags.iter().find(|(ns, _)| *ns == c.object.namespace).map(|(_, d)| *d);
            // Events keep their order: once one is held back, the ones after it wait too.
            let held = lag.is_some() || !self.late.is_empty();
            let mut one = BytesMut::new();
            let target = if held { &mut one } else { &mut out };
            // A failed conversion (a custom resource's webhook) ends the watch with its error.
            if self.rendering != Rendering::Json {
                frame(target, kind.as_str(), &self.rendered(&try_render(rt, &c.object)?));
            } else if served_as_stored(rt, &c.object) {
                frame(target, kind.as_str(), &c.object.bytes);
            } else {
                frame(target, kind.as_str(), &try_render(rt, &c.object)?);
            }
            if held {
                let due = now + lag.unwrap_or_default();
                let due = self.late.back().map_or(due, |l| l.due.max(due));
                self.late.push_back(LateEvent { due, resource_version: c.resource_version, frame: one.freeze() });
            } else {
                self.delivered = c.resource_version;
            }
        }
        self.cursor = st.store.resource_version;
        if self.late.is_empty() {
            self.delivered = self.cursor;
        }
        Ok((!out.is_empty()).then(|| out.freeze()))
    }

    /// The held-back events that are due, as one chunk.
    fn due_events(&mut self) -> Option<Bytes> {
        let now = Instant::now();
        let mut out = BytesMut::new();
        while let Some(l) = self.late.front().filter(|l| l.due <= now) {
            out.put_slice(&l.frame);
            self.delivered = l.resource_version;
            self.late.pop_front();
        }
        (!out.is_empty()).then(|| out.freeze())
    }

    async fn next_chunk(&mut self) -> Option<Bytes> {
        if let Some(b) = self.pending.pop_front() {
            return Some(b);
        }
        if self.done {
            return None;
        }
        loop {
            if let Some(chunk) = self.due_events() {
                return Some(chunk);
            }
            self.changed.borrow_and_update();
            match self.catch_up() {
                Ok(Some(chunk)) => return Some(chunk),
                Ok(None) => {}
                Err(e) => {
                    self.done = true;
                    return Some(value_frame("ERROR", &e.to_status()));
                }
            }
            let stop = async {
                match self.stop.as_mut() {
                    Some(s) => {
                        let _ = s.wait_for(|v| *v).await;
                    }
                    None => std::future::pending().await,
                }
            };
            let next_late = self.late.front().map(|l| l.due);
            let late_due = async {
                match next_late {
                    Some(due) => tokio::time::sleep_until(due).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = late_due => {}
                r = self.changed.changed() => {
                    if r.is_err() {
                        return None;
                    }
                }
                _ = self.next_bookmark.as_mut(), if self.bookmarks => {
                    let next = Instant::now() + self.ctx.settings.bookmark_interval;
                    self.next_bookmark.as_mut().reset(next);
                    self.fast_forward();
                    return Some(self.bookmark(false));
                }
                _ = self.deadline.as_mut() => return None,
                _ = stop => return None,
                _ = self.restarted.changed() => return None,
            }
        }
    }
}

/// Starts a watch on the target's collection.
pub(super) fn handle(call: Call) -> ApiResult<Response> {
    let rendering = tables::negotiate(&call.parts.headers, call.parts.uri.query())?;
    let stop = call.parts.extensions.get::<ListenerStop>().cloned();
    let user = call.user().name.clone();
    let Call { ctx, target, query, .. } = call;
    let (labels, fields) = query.selectors(&target.rt)?;
    let send_initial = query.send_initial_events;
    if send_initial.is_some() {
        // kube-apiserver 1.37 no longer insists on allowWatchBookmarks (it sends the
        // initial-events-end bookmark regardless): measured by `kproof differential`.
        if query.resource_version_match.as_deref() != Some("NotOlderThan") {
            return Err(invalid_watch(
                "resourceVersionMatch",
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch=NotOlderThan",
            ));
        }
    } else if query.resource_version_match.is_some() {
        return Err(invalid_watch(
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    let requested = match query.resource_version.as_deref() {
        None => None,
        Some(s) => Some(read_rv(s)?),
    };
    // As the list handler reads TimeoutSeconds: 0 (or none) is the server's default.
    let timeout = match query.timeout_seconds {
        None | Some(0) => ctx.settings.default_watch_timeout,
        Some(t) => Duration::from_secs(u64::try_from(t).unwrap_or(0)),
    };
    let now = Instant::now();
    let changed = ctx.subscribe_writes(target.rt.storage_key());
    let mut w = Watcher {
        ctx: ctx.clone(),
        target,
        labels,
        fields,
        cursor: 0,
        changed,
        stop: stop.map(|s| s.0),
        restarted: ctx.restarts.subscribe(),
        bookmarks: query.allow_watch_bookmarks,
        deadline: Box::pin(tokio::time::sleep_until(now + timeout)),
        next_bookmark: Box::pin(tokio::time::sleep_until(now + ctx.settings.bookmark_interval.min(timeout))),
        pending: VecDeque::new(),
        done: false,
        rendering,
        user,
        late: VecDeque::new(),
        delivered: 0,
    };
    // Unset or "0": start with the current state as ADDED events; sendInitialEvents=true too.
    // A resourceVersion N without sendInitialEvents: only changes after N.
    let initial = match (send_initial, requested) {
        (Some(s), _) => s,
        (None, None) | (None, Some(0)) => true,
        (None, Some(_)) => false,
    };
    {
        let st = ctx.state.read();
        match requested {
            Some(n) if n > st.store.resource_version && !initial => {
                return Err(ApiError::too_large_resource_version(n, st.store.resource_version));
            }
            Some(n) if !initial && n != 0 && n < st.store.compacted => {
                // Too old: the apiserver answers 200 and a single ERROR event.
                w.pending.push_back(value_frame(
                    "ERROR",
                    &ApiError::too_old_resource_version(n, st.store.compacted + 1).to_status(),
                ));
                w.done = true;
            }
            Some(n) if !initial && n != 0 => {
                w.cursor = n;
                w.delivered = n;
            }
            _ => {
                let key = w.target.rt.storage_key();
                let mut out = BytesMut::new();
                if let Some(coll) = st.store.collections.get(key).filter(|_| initial) {
                    let objects: Vec<&StoredObject> =
                        coll.values().filter(|o| w.selected(o)).map(|o| o.as_ref()).collect();
                    match try_render_many(&w.target.rt, &objects) {
                        Ok(bodies) => {
                            for body in bodies {
                                if w.rendering != Rendering::Json {
                                    frame(&mut out, "ADDED", &w.rendered(&body));
                                } else {
                                    frame(&mut out, "ADDED", &body);
                                }
                            }
                        }
                        Err(e) => {
                            w.pending.push_back(value_frame("ERROR", &e.to_status()));
                            w.done = true;
                        }
                    }
                }
                if !out.is_empty() {
                    w.pending.push_back(out.freeze());
                }
                w.cursor = st.store.resource_version;
                w.delivered = w.cursor;
                if send_initial == Some(true) {
                    w.pending.push_back(w.bookmark(true));
                }
            }
        }
    }
    let w_content_type = w.rendering.content_type();
    let stream = futures::stream::unfold(w, |mut w| async move {
        w.next_chunk().await.map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), w))
    });
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = StatusCode::OK;
    let content_type =
        HeaderValue::from_str(&w_content_type).unwrap_or_else(|_| HeaderValue::from_static("application/json"));
    resp.headers_mut().insert(header::CONTENT_TYPE, content_type);
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    Ok(resp)
}

fn invalid_watch(field: &str, msg: &str) -> ApiError {
    invalid_options("ListOptions", vec![crate::error::StatusCause::field("FieldValueForbidden", field, msg)])
}
