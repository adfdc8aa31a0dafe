//! What a row leaves behind on a real-time cluster (the kubeconfig and upstream backends): a row
//! runs in a namespace of its own, deleted afterwards, but the cluster-scoped objects it creates
//! (a ClusterQueue, a DeviceClass, a namespace) and its objects in other namespaces outlive it
//! and collide with the next user's manifests. The row's client is wrapped
//! ([`RowObjects::client`]) so every object the row reads, writes or creates outside its own
//! namespace is noted; when the row ends ([`RowObjects::clean_up`]) the objects it created are
//! deleted and waited for, in reverse order of creation.
//!
//! Rows run in parallel on one cluster and share cluster-scoped objects by name (two Kueue rows
//! both apply ClusterQueue `cluster-queue`: the first creates it, the second merges into it).
//! So an object is deleted only when no running row touches it any more ([`SharedObjects`]
//! counts the rows that touched it), by the last of them, and only if a row created it: what
//! the cluster had before (a Node, the simulated gateway's GatewayClass) stays. A row that
//! touches an object while its deletion runs waits until it is gone, then goes on (and creates
//! it anew).

use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Objects touched by the rows running now on one cluster, by object URL.
#[derive(Debug, Default)]
pub struct SharedObjects {
    objects: Mutex<HashMap<String, Shared>>,
}

#[derive(Debug, Default)]
struct Shared {
    /// Rows running now that touched it.
    rows: usize,
    /// Whether a row created it (else the cluster had it).
    created: bool,
    /// Its deletion runs.
    deleting: bool,
}

/// The objects one row touched outside its own namespace; see the module docs.
#[derive(Debug)]
pub struct RowObjects {
    shared: Arc<SharedObjects>,
    namespace: String,
    /// Object URLs in the order the row first touched them.
    touched: Mutex<Vec<String>>,
}

/// The URL of the object a request path names (`/api/v1/namespaces/a/pods/p/status` →
/// `/api/v1/namespaces/a/pods/p`), with its namespace (`""` when cluster-scoped); `None` for a
/// collection, discovery or anything else.
fn object_of(path: &str) -> Option<(String, String)> {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let rest = match segs.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return None,
    };
    let prefix_len = segs.len() - rest.len();
    let keep = match rest {
        ["namespaces", _, resource, ..] if !matches!(*resource, "status" | "finalize") => match rest {
            [_, ns, _, _name, ..] => Some((4, ns.to_string())),
            _ => None,
        },
        [_resource, _name, ..] => Some((2, String::new())),
        _ => None,
    };
    let (n, ns) = keep?;
    Some((format!("/{}", segs[..prefix_len + n].join("/")), ns))
}

impl RowObjects {
    /// The record of a row running in `namespace` on the cluster `shared` keeps.
    pub fn new(shared: Arc<SharedObjects>, namespace: &str) -> Arc<Self> {
        Arc::new(Self { shared, namespace: namespace.to_string(), touched: Mutex::new(Vec::new()) })
    }

    /// Notes that the row touches `url`; waits while a deletion of it (by another row) runs.
    async fn touch(&self, url: &str, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            {
                let mut touched = self.touched.lock();
                let mut objects = self.shared.objects.lock();
                let entry = objects.entry(url.to_string()).or_default();
                if !entry.deleting || tokio::time::Instant::now() >= deadline {
                    if !touched.iter().any(|u| u == url) {
                        entry.rows += 1;
                        touched.push(url.to_string());
                    }
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn created(&self, url: &str) {
        if let Some(e) = self.shared.objects.lock().get_mut(url) {
            e.created = true;
        }
    }

    /// `client` with every request noted: the objects it reads and writes outside the row's
    /// namespace, and whether it created them (a POST, or a server-side apply, answered 201).
    /// A touch of an object being deleted waits up to `timeout` for the deletion.
    pub fn client(self: &Arc<Self>, client: &kube::Client, timeout: Duration) -> kube::Client {
        let me = self.clone();
        let inner = client.clone();
        let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let (me, inner) = (me.clone(), inner.clone());
            async move {
                let method = req.method().clone();
                let path = req.uri().path().to_string();
                let object = object_of(&path).filter(|(_, ns)| *ns != me.namespace);
                if let Some((url, _)) = &object {
                    me.touch(url, timeout).await;
                }
                let response = inner.send(req).await?;
                let creates = matches!(method, http::Method::POST | http::Method::PATCH)
                    && response.status() == http::StatusCode::CREATED;
                if !creates {
                    return Ok::<_, kube::Error>(response);
                }
                let (parts, body) = response.into_parts();
                let bytes: Bytes = body.collect_bytes().await?;
                if let Some(url) = created_url(&method, &path, &bytes, object.as_ref().map(|(u, _)| u.as_str()))
                    && object_of(&url).is_some_and(|(_, ns)| ns != me.namespace)
                {
                    me.touch(&url, timeout).await;
                    me.created(&url);
                }
                Ok(http::Response::from_parts(parts, kube::client::Body::from(bytes)))
            }
        });
        kube::Client::new(service, client.default_namespace().to_string())
    }

    /// Ends the row's use of what it touched: each object no other running row touches and a
    /// row created is deleted (background propagation) and waited for up to `timeout`, the
    /// newest first. Returns what could not be deleted, one line each.
    pub async fn clean_up(&self, client: &kube::Client, timeout: Duration) -> Vec<String> {
        let touched = std::mem::take(&mut *self.touched.lock());
        let mut problems = Vec::new();
        for url in touched.iter().rev() {
            let delete = {
                let mut objects = self.shared.objects.lock();
                let Some(e) = objects.get_mut(url) else { continue };
                e.rows = e.rows.saturating_sub(1);
                if e.rows > 0 {
                    false
                } else if e.created {
                    e.deleting = true;
                    true
                } else {
                    objects.remove(url);
                    false
                }
            };
            if !delete {
                continue;
            }
            if let Err(e) = delete_and_wait(client, url, timeout).await {
                problems.push(format!("{url}: {e}"));
            }
            self.shared.objects.lock().remove(url);
        }
        problems
    }
}

/// The object URL a create answered 201 made: the collection URL of a POST plus the answer's
/// name, or the object URL of a server-side apply.
fn created_url(method: &http::Method, path: &str, body: &[u8], object: Option<&str>) -> Option<String> {
    if *method == http::Method::PATCH {
        return object.map(str::to_string);
    }
    let answer: serde_json::Value = serde_json::from_slice(body).ok()?;
    let name = answer.pointer("/metadata/name").and_then(serde_json::Value::as_str).filter(|n| !n.is_empty())?;
    if answer.get("kind").and_then(serde_json::Value::as_str) == Some("Status") {
        return None;
    }
    Some(format!("{}/{}", path.trim_end_matches('/'), crate::engine::request::path_segment(name)))
}

/// Deletes `url` and polls until it answers 404.
async fn delete_and_wait(client: &kube::Client, url: &str, timeout: Duration) -> Result<(), String> {
    let send = |method: http::Method| {
        let body = if method == http::Method::DELETE {
            kube::client::Body::from(br#"{"propagationPolicy":"Background"}"#.to_vec())
        } else {
            kube::client::Body::empty()
        };
        http::Request::builder()
            .method(method)
            .uri(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(body)
            .map_err(|e| e.to_string())
    };
    let answer = client.send(send(http::Method::DELETE)?).await.map_err(|e| e.to_string())?;
    match answer.status().as_u16() {
        200 | 202 | 404 => {}
        code => return Err(format!("DELETE answered {code}")),
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let answer = client.send(send(http::Method::GET)?).await.map_err(|e| e.to_string())?;
        if answer.status() == http::StatusCode::NOT_FOUND {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("still there {}s after its deletion", timeout.as_secs()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_path_names_its_object() {
        let o = |p: &str| object_of(p);
        assert_eq!(o("/api/v1/namespaces/a/pods/p/status"), Some(("/api/v1/namespaces/a/pods/p".into(), "a".into())));
        assert_eq!(o("/api/v1/namespaces/a/pods"), None);
        assert_eq!(o("/api/v1/namespaces/a"), Some(("/api/v1/namespaces/a".into(), String::new())));
        assert_eq!(o("/api/v1/namespaces/a/finalize"), Some(("/api/v1/namespaces/a".into(), String::new())));
        assert_eq!(
            o("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"),
            Some(("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq".into(), String::new()))
        );
        assert_eq!(o("/apis/kueue.x-k8s.io/v1beta2/clusterqueues"), None);
        assert_eq!(o("/apis/kueue.x-k8s.io/v1beta2"), None);
        assert_eq!(o("/version"), None);
    }

    #[test]
    fn a_create_names_the_object_it_made() {
        let post = http::Method::POST;
        let body = br#"{"kind":"ClusterQueue","metadata":{"name":"cq"}}"#;
        assert_eq!(
            created_url(&post, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", body, None),
            Some("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq".into())
        );
        assert_eq!(created_url(&post, "/api/v1/namespaces/a/pods/p/binding", br#"{"kind":"Status"}"#, None), None);
        assert_eq!(
            created_url(&http::Method::PATCH, "/x", b"", Some("/api/v1/namespaces/n")),
            Some("/api/v1/namespaces/n".into())
        );
    }

    #[tokio::test]
    async fn an_object_is_left_to_the_last_row_that_touched_it_and_kept_unless_a_row_made_it() {
        let shared = Arc::new(SharedObjects::default());
        let (a, b) = (RowObjects::new(shared.clone(), "ns-a"), RowObjects::new(shared.clone(), "ns-b"));
        let long = Duration::from_secs(1);
        a.touch("/x/made", long).await;
        a.created("/x/made");
        b.touch("/x/made", long).await;
        a.touch("/x/was-there", long).await;
        // A cannot reach a cluster here; it must not try to delete what B still uses nor what it
        // did not make, so the fake client is never called.
        let client = kube::Client::new(
            tower::service_fn(|_: http::Request<kube::client::Body>| async {
                Err::<http::Response<kube::client::Body>, kube::Error>(kube::Error::LinesCodecMaxLineLengthExceeded)
            }),
            "default",
        );
        assert!(a.clean_up(&client, long).await.is_empty());
        assert_eq!(shared.objects.lock().get("/x/made").map(|e| e.rows), Some(1));
        assert!(!shared.objects.lock().contains_key("/x/was-there"));
        let problems = b.clean_up(&client, long).await;
        assert_eq!(problems.len(), 1, "the last row deletes what a row made: {problems:?}");
    }
}
