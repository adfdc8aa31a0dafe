"""A TrainJob controller in Python (official `kubernetes` client), profile pg.

It shares one ResourceClaim across a TrainJob's pods through a PodGroup (KEP-5729): the
PodGroup is created first and carries the claim (spec.claim names a ResourceClaimTemplate),
every pod names the PodGroup and the same claim, and the PodGroup is deleted only once no pod
of the job is running or will be created. It never touches claims or the PodGroup's
protection finalizer. If the API server drops the PodGroup's resourceClaims (the
DRAWorkloadResourceClaims gate is off) it creates no pods and records a Warning event.

Certify it with:
  kproof certify reservedfor --profile pg --crd ../reservedfor-controller/deploy/crd.yaml \
    --workload ../reservedfor-controller/deploy/trainjob.yaml \
    --rbac ../reservedfor-controller/deploy/role-pg.yaml -- python3 -u trainjob_controller.py
"""

import os
import sys
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL = "example.kproof.dev", "v1", "trainjobs"
JOB_LABEL = "example.kproof.dev/job"


def namespace():
    if os.environ.get("KPROOF_NAMESPACE"):
        return os.environ["KPROOF_NAMESPACE"]
    _, active = config.list_kube_config_contexts()
    return active["context"].get("namespace", "default")


def done(pod):
    """kube-controller-manager's isPodDone: terminal, or deleted before it was scheduled."""
    phase = (pod.status.phase if pod.status else None) or "Pending"
    if phase in ("Succeeded", "Failed"):
        return True
    return pod.metadata.deletion_timestamp is not None and not pod.spec.node_name


def ignore(codes, call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except ApiException as e:
        if e.status in codes:
            return None
        raise


def reconcile(ns, job, pods, core, custom):
    name, uid = job["metadata"]["name"], job["metadata"]["uid"]
    if job["metadata"].get("deletionTimestamp"):
        return  # garbage collection deletes the PodGroup; podgroupprotection holds it
    replicas = job["spec"].get("replicas", 0)
    template = job["spec"]["claim"]
    mine = [p for p in pods if (p.metadata.labels or {}).get(JOB_LABEL) == name]
    active = [p for p in mine if not done(p)]
    succeeded = [p for p in mine if p.status and p.status.phase == "Succeeded"]
    finished = replicas > 0 and len(succeeded) >= replicas
    group = ignore((404,), custom.get_namespaced_custom_object, "scheduling.k8s.io", "v1beta1", ns, "podgroups", name)
    if group:
        owners = group["metadata"].get("ownerReferences") or []
        if not owners or owners[0]["uid"] != uid or group["metadata"].get("deletionTimestamp"):
            return  # an earlier job's PodGroup, or ours going: wait until it is gone
    if (finished or replicas == 0) and not active:
        if group:
            ignore((404, 409), custom.delete_namespaced_custom_object, "scheduling.k8s.io", "v1beta1", ns, "podgroups", name)
        return
    if not group:
        body = {
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "TrainJob",
                                                             "name": name, "uid": uid, "controller": True,
                                                             "blockOwnerDeletion": True}]},
            "spec": {"schedulingPolicy": {"basic": {}},
                     "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": template}]},
        }
        group = ignore((409,), custom.create_namespaced_custom_object, "scheduling.k8s.io", "v1beta1", ns, "podgroups", body)
        if not group:
            return
    if not group.get("spec", {}).get("resourceClaims"):
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(name=f"{name}.reservationunsupported"),
            involved_object=client.V1ObjectReference(api_version=f"{GROUP}/{VERSION}", kind="TrainJob", name=name,
                                                     uid=uid, namespace=ns),
            reason="ReservationUnsupported", type="Warning",
            message="the API server dropped the PodGroup's resourceClaims (is DRAWorkloadResourceClaims off?); no pods are created",
        )
        ignore((409,), core.create_namespaced_event, ns, event)
        return
    want = 0 if finished else replicas
    live = [p for p in mine if not p.metadata.deletion_timestamp and p.status and p.status.phase not in ("Succeeded", "Failed")]
    live += [p for p in mine if not p.metadata.deletion_timestamp and not p.status]
    for _ in range(len(live), max(0, want - len(succeeded))):
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": f"{name}-", "labels": {JOB_LABEL: name},
                         "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "TrainJob", "name": name,
                                              "uid": uid, "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"restartPolicy": "Never", "schedulingGroup": {"podGroupName": name},
                     "containers": [{"name": "trainer", "image": "busybox", "resources": {"claims": [{"name": "dev"}]}}],
                     "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": template}]},
        }
        core.create_namespaced_pod(ns, pod)
    for p in sorted(live, key=lambda p: p.metadata.name, reverse=True)[: max(0, len(live) - want)]:
        ignore((404, 409), core.delete_namespaced_pod, p.metadata.name, ns)


def main():
    config.load_kube_config()
    ns = namespace()
    core, custom = client.CoreV1Api(), client.CustomObjectsApi()
    print(f"trainjob_controller.py: namespace {ns}", file=sys.stderr)
    while True:
        try:
            jobs = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]
            pods = core.list_namespaced_pod(ns, label_selector=JOB_LABEL).items
            for job in jobs:
                try:
                    reconcile(ns, job, pods, core, custom)
                except ApiException as e:
                    print(f"trainjob_controller.py: TrainJob {job['metadata']['name']}: {e.status} {e.reason}: {e.body}",
                          file=sys.stderr)
        except ApiException as e:
            print(f"trainjob_controller.py: {e.status} {e.reason}", file=sys.stderr)
        time.sleep(0.3)


if __name__ == "__main__":
    main()
