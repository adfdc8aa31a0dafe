"""The Python `kubernetes` client from PyPI against kproof's fake-apiserver.

Run by tests/python_client.rs with KUBECONFIG pointing at a fresh server. Prints one line per
case: `PASS <case>`, `FAIL <case>: <why>` or `MISSING <case>: <why>` (the server lacks a feature
the case needs), and exits non-zero when a case FAILs.
"""

import sys
import time
import traceback

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "default"
results = []


def case(fn):
    name = fn.__name__
    try:
        fn()
        results.append(("PASS", name, ""))
    except ApiException as e:
        if e.status == 415 and "strategic-merge-patch" in (e.body or "") and name == "strategic_merge_patch_on_a_deployment":
            results.append(("MISSING", name, "strategic merge patch is not implemented (415)"))
        else:
            results.append(("FAIL", name, f"{e.status} {e.reason}: {e.body}"))
    except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
        results.append(("FAIL", name, f"{e!r} {traceback.format_exc(limit=3)}"))
    return fn


def expect(cond, why):
    if not cond:
        raise AssertionError(why)


config.load_kube_config()
core = client.CoreV1Api()
apps = client.AppsV1Api()
ext = client.ApiextensionsV1Api()
custom = client.CustomObjectsApi()


def cm(name, value):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"key": value})


@case
def create_without_content_type():
    # The client sends POST bodies with no Content-Type header: the server must read JSON.
    created = core.create_namespaced_config_map(NS, cm("py-created", "v"))
    expect(created.metadata.uid, "no uid on the created object")
    expect(created.metadata.resource_version, "no resourceVersion")
    read = core.read_namespaced_config_map("py-created", NS)
    expect(read.data == {"key": "v"}, f"read back {read.data}")


@case
def watch_resumes_from_a_resource_version():
    core.create_namespaced_config_map(NS, cm("py-w1", "1"))
    w = watch.Watch()
    last_rv = None
    seen = set()
    for ev in w.stream(core.list_namespaced_config_map, NS, timeout_seconds=10):
        seen.add(ev["object"].metadata.name)
        last_rv = ev["object"].metadata.resource_version
        if "py-w1" in seen:
            w.stop()
    expect("py-w1" in seen, f"first watch saw {seen}")
    # Changes after the first watch stopped are delivered when it resumes from last_rv;
    # nothing from before it is replayed.
    core.create_namespaced_config_map(NS, cm("py-w2", "2"))
    core.patch_namespaced_config_map("py-w1", NS, {"data": {"key": "1b"}})
    events = []
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=last_rv, timeout_seconds=10):
        events.append((ev["type"], ev["object"].metadata.name))
        if len(events) >= 2:
            w.stop()
    expect(events == [("ADDED", "py-w2"), ("MODIFIED", "py-w1")], f"resumed watch saw {events}")


@case
def strategic_merge_patch_on_a_deployment():
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "py-web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "py-web"}},
            "template": {
                "metadata": {"labels": {"app": "py-web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
            },
        },
    }
    apps.create_namespaced_deployment(NS, body)
    # A dict body goes out as application/strategic-merge-patch+json: containers merge by name.
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}}}}
    patched = apps.patch_namespaced_deployment("py-web", NS, patch)
    names = [c.name for c in patched.spec.template.spec.containers]
    expect(names == ["c", "sidecar"] or sorted(names) == ["c", "sidecar"], f"containers after SMP: {names}")


@case
def merge_patch_on_a_custom_object():
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"color": {"type": "string"}, "size": {"type": "integer"}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    ext.create_custom_resource_definition(crd)
    deadline = time.time() + 20
    while True:
        got = ext.read_custom_resource_definition("gizmos.example.com")
        conds = {c.type: c.status for c in (got.status.conditions or [])} if got.status else {}
        if conds.get("Established") == "True":
            break
        expect(time.time() < deadline, f"CRD not Established: {conds}")
        time.sleep(0.1)
    obj = {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g1"}, "spec": {"color": "blue", "size": 2}}
    custom.create_namespaced_custom_object("example.com", "v1", NS, "gizmos", obj)
    # A dict body goes out as application/merge-patch+json for custom objects.
    patched = custom.patch_namespaced_custom_object("example.com", "v1", NS, "gizmos", "g1", {"spec": {"color": "red"}})
    expect(patched["spec"] == {"color": "red", "size": 2}, f"after merge patch: {patched['spec']}")
    items = custom.list_namespaced_custom_object("example.com", "v1", NS, "gizmos")["items"]
    expect([i["metadata"]["name"] for i in items] == ["g1"], f"list: {items}")


for status, name, why in results:
    print(f"{status} {name}" + (f": {why}" if why else ""))
sys.exit(1 if any(s == "FAIL" for s, _, _ in results) else 0)
