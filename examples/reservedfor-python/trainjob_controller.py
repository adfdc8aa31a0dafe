"""A TrainJob controller in Python (official `kubernetes` client), profiles pg, raw and w.

The same controller as examples/reservedfor-controller (Rust), written the way a Python
integrator would, to show that `kproof certify reservedfor` certifies a controller in any
language. The profile comes from `--profile pg|raw|w`, else KPROOF_PROFILE (kproof sets it).

- pg: one PodGroup per job carries the claim (spec.claim names a ResourceClaimTemplate); the
  PodGroup is created first, every pod names it and the same claim, and the PodGroup is
  deleted only once no pod of the job is running or will be created. Claims and the
  PodGroup's protection finalizer are never touched.
- raw: the pods share the ResourceClaim spec.claim; once it is allocated the controller adds
  its own entry {apiGroup, resource, name, uid} to status.reservedFor (one pod first, the rest
  after the entry is in), and removes only that entry once no pod is active. The update carries
  the resourceVersion read, so a concurrent write is a 409 and the next pass reads again.
- w (KEP-5194 as proposed): the controller creates the claim <job>-<spec.claim> from the
  ResourceClaimTemplate spec.claim with spec.reservedFor naming the job, before any pod, and
  removes its own entry from status.reservedFor once no pod is active. A claim of an earlier
  job of the same name is released and deleted before the new one is made.

In raw and w a finalizer on the job keeps a deleted job until its entry is gone. A job fails
as soon as one of its pods fails (no retries); a Failed pod is done, as kube-controller-manager's
isPodDone says. The job's status carries the condition ReservationHeld (True while the claim
is held, the message naming it; False with reason Released once given up). If the API server
drops the PodGroup's resourceClaims or the claim's spec.reservedFor (the gate is off), no pods
are created and a Warning event says why.

Certify it with (from this directory; --profile and the Role as wanted):
  kproof certify reservedfor --profile w --crd ../reservedfor-controller/deploy/crd.yaml \
    --workload ../reservedfor-controller/deploy/trainjob.yaml \
    --rbac ../reservedfor-controller/deploy/role-w.yaml -- python3 -u trainjob_controller.py
"""

import os
import sys
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL = "example.kproof.dev", "v1", "trainjobs"
JOB_LABEL = "example.kproof.dev/job"
FINALIZER = "example.kproof.dev/release-reservation"
RESOURCE = ("resource.k8s.io", "v1")
SCHEDULING = ("scheduling.k8s.io", "v1beta1")
RESERVED_FOR_MAX_SIZE = 256  # k8s.io/api resource/v1 ResourceClaimReservedForMaxSize


def namespace():
    if os.environ.get("KPROOF_NAMESPACE"):
        return os.environ["KPROOF_NAMESPACE"]
    _, active = config.list_kube_config_contexts()
    return active["context"].get("namespace", "default")


def phase_of(pod):
    return (pod.status.phase if pod.status else None) or "Pending"


def done(pod):
    """kube-controller-manager's isPodDone: terminal, or deleted before it was scheduled."""
    if phase_of(pod) in ("Succeeded", "Failed"):
        return True
    return pod.metadata.deletion_timestamp is not None and not pod.spec.node_name


def ignore(codes, call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except ApiException as e:
        if e.status in codes:
            return None
        raise


class Controller:
    def __init__(self, profile, ns):
        self.profile, self.ns = profile, ns
        self.core, self.custom = client.CoreV1Api(), client.CustomObjectsApi()

    # ------------------------------------------------------------------ helpers
    def owner(self, job):
        m = job["metadata"]
        return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TrainJob", "name": m["name"], "uid": m["uid"],
                "controller": True, "blockOwnerDeletion": True}

    def event(self, job, reason, message):
        m = job["metadata"]
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(name=f"{m['name']}.{reason.lower()}"),
            involved_object=client.V1ObjectReference(api_version=f"{GROUP}/{VERSION}", kind="TrainJob",
                                                     name=m["name"], uid=m["uid"], namespace=self.ns),
            reason=reason, type="Warning", message=message,
        )
        ignore((409,), self.core.create_namespaced_event, self.ns, event)

    def set_status(self, job, phase, held, reason, message):
        """The phase and the ReservationHeld condition (C18); written only when they change."""
        condition = {"type": "ReservationHeld", "status": "True" if held else "False", "reason": reason,
                     "message": message}
        if job["metadata"].get("generation") is not None:
            condition["observedGeneration"] = job["metadata"]["generation"]
        status = job.get("status") or {}
        if status.get("phase") == phase and status.get("conditions") == [condition]:
            return
        body = {"status": {"phase": phase, "reservation": message, "conditions": [condition]}}
        ignore((404, 409), self.custom.patch_namespaced_custom_object_status, GROUP, VERSION, self.ns, PLURAL,
               job["metadata"]["name"], body)

    def claim_status(self, job, phase, held, ended, claim, active):
        if held:
            self.set_status(job, phase, True, "PodsActive",
                            f"ResourceClaim {claim} is reserved for this job: {active} active pods")
        elif ended:
            self.set_status(job, phase, False, "Released",
                            f"ResourceClaim {claim} released: no pod of this job is active")
        else:
            self.set_status(job, phase, False, "Reserving", f"ResourceClaim {claim} is not reserved for this job yet")

    def set_finalizer(self, job, present):
        finalizers = list(job["metadata"].get("finalizers") or [])
        if (FINALIZER in finalizers) == present:
            return
        finalizers = finalizers + [FINALIZER] if present else [f for f in finalizers if f != FINALIZER]
        body = {"metadata": {"finalizers": finalizers, "resourceVersion": job["metadata"]["resourceVersion"]}}
        ignore((404, 409), self.custom.patch_namespaced_custom_object, GROUP, VERSION, self.ns, PLURAL,
               job["metadata"]["name"], body)

    def get_claim(self, name):
        return ignore((404,), self.custom.get_namespaced_custom_object, *RESOURCE, self.ns, "resourceclaims", name)

    def write_entries(self, job, claim, keep_uid=None, add=None):
        """Adds our entry or removes every entry of this job's name but keep_uid; every other entry
        stays. The update carries the resourceVersion read: a 409 means someone wrote in between,
        and the next pass reads again instead of overwriting what it did not see."""
        name = job["metadata"]["name"]
        entries = (claim.get("status") or {}).get("reservedFor") or []

        def ours(e):
            return e.get("apiGroup") == GROUP and e.get("resource") == PLURAL and e.get("name") == name

        kept = [e for e in entries if not ours(e) or (keep_uid and e.get("uid") == keep_uid)]
        if add and not any(e.get("uid") == add["uid"] for e in kept):
            kept.append(add)
        if kept == entries:
            return
        claim["status"]["reservedFor"] = kept
        try:
            self.custom.replace_namespaced_custom_object_status(*RESOURCE, self.ns, "resourceclaims",
                                                                claim["metadata"]["name"], claim)
        except ApiException as e:
            if e.status in (404, 409):
                print(f"trainjob_controller.py: claim {claim['metadata']['name']}: {e.status}; re-reading",
                      file=sys.stderr)
                return
            if e.status == 403:
                # Say it where the user looks (C14); without the entry the job cannot go on.
                self.event(job, "ReservationForbidden", f"cannot write the claim's status.reservedFor: {e.reason}")
            raise

    def sync_pods(self, job, pods, want, limit, spec):
        name = job["metadata"]["name"]
        succeeded = [p for p in pods if phase_of(p) == "Succeeded"]
        live = [p for p in pods if not p.metadata.deletion_timestamp and phase_of(p) not in ("Succeeded", "Failed")]
        target = min(max(0, want - len(succeeded)), limit)
        for _ in range(len(live), target):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"generateName": f"{name}-", "labels": {JOB_LABEL: name},
                                "ownerReferences": [self.owner(job)]},
                   "spec": spec}
            self.core.create_namespaced_pod(self.ns, pod)
        for p in sorted(live, key=lambda p: p.metadata.name, reverse=True)[: max(0, len(live) - max(0, want))]:
            ignore((404, 409), self.core.delete_namespaced_pod, p.metadata.name, self.ns,
                       _preload_content=False)

    def stop_owned_pods(self, job, pods):
        """A deleted job's pods stop, unless the deletion orphans them (they keep the entry)."""
        if "orphan" in (job["metadata"].get("finalizers") or []):
            return
        uid = job["metadata"]["uid"]
        for p in pods:
            owners = [o for o in (p.metadata.owner_references or []) if o.controller]
            if not p.metadata.deletion_timestamp and owners and owners[0].uid == uid:
                ignore((404, 409), self.core.delete_namespaced_pod, p.metadata.name, self.ns,
                       _preload_content=False)

    @staticmethod
    def outcome(pods, replicas):
        """(ended, phase): all replicas succeeded, or a pod failed (no retries)."""
        if any(phase_of(p) == "Failed" for p in pods):
            return True, "Failed"
        if replicas > 0 and sum(1 for p in pods if phase_of(p) == "Succeeded") >= replicas:
            return True, "Succeeded"
        return False, "Running"

    @staticmethod
    def pod_spec(claim_ref, group=None):
        spec = {"restartPolicy": "Never",
                "containers": [{"name": "trainer", "image": "busybox", "resources": {"claims": [{"name": "dev"}]}}],
                "resourceClaims": [dict(name="dev", **claim_ref)]}
        if group:
            spec["schedulingGroup"] = {"podGroupName": group}
        return spec

    # ------------------------------------------------------------------ profiles
    def reconcile(self, job, pods):
        mine = [p for p in pods if (p.metadata.labels or {}).get(JOB_LABEL) == job["metadata"]["name"]]
        {"pg": self.reconcile_pg, "raw": self.reconcile_raw, "w": self.reconcile_w}[self.profile](job, mine)

    def reconcile_pg(self, job, pods):
        name, uid = job["metadata"]["name"], job["metadata"]["uid"]
        if job["metadata"].get("deletionTimestamp"):
            return  # garbage collection deletes the PodGroup; podgroupprotection holds it
        replicas, template = job["spec"].get("replicas", 0), job["spec"]["claim"]
        active = [p for p in pods if not done(p)]
        ended, phase = self.outcome(pods, replicas)
        released = f"PodGroup {name} deleted: its claim from ResourceClaimTemplate {template} is released"
        group = ignore((404,), self.custom.get_namespaced_custom_object, *SCHEDULING, self.ns, "podgroups", name)
        if group:
            owners = group["metadata"].get("ownerReferences") or []
            if not owners or owners[0]["uid"] != uid:
                self.set_status(job, "Pending", False, "Waiting", f"waiting for the previous job's PodGroup {name} to go")
                return
            if group["metadata"].get("deletionTimestamp"):
                self.set_status(job, phase if ended else "Pending", False, "Released", released)
                return
        if (ended or replicas == 0) and not active:
            if group:
                ignore((404, 409), self.custom.delete_namespaced_custom_object, *SCHEDULING, self.ns, "podgroups", name)
            self.set_status(job, phase, False, "Released", released)
            return
        if not group:
            body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": name, "ownerReferences": [self.owner(job)]},
                    "spec": {"schedulingPolicy": {"basic": {}},
                             "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": template}]}}
            group = ignore((409,), self.custom.create_namespaced_custom_object, *SCHEDULING, self.ns, "podgroups", body)
            if not group:
                return
        if not group.get("spec", {}).get("resourceClaims"):
            self.event(job, "ReservationUnsupported", "the API server dropped the PodGroup's resourceClaims "
                       "(is DRAWorkloadResourceClaims off?); no pods are created")
            self.set_status(job, "Blocked", False, "Unsupported", "the API server dropped the PodGroup's resourceClaims")
            return
        want = 0 if ended else replicas
        self.sync_pods(job, pods, want, want, self.pod_spec({"resourceClaimTemplateName": template}, group=name))
        self.set_status(job, phase, True, "PodsActive",
                        f"PodGroup {name} holds the claim from ResourceClaimTemplate {template}: {len(active)} active pods")

    def entry_lifecycle(self, job, pods):
        """What raw and w share: our finalizer while the job lives, the pods still active, how
        the job ended, and whether the entry must go now (deleted, ended or scaled to zero, with
        no pod left active)."""
        deleting = bool(job["metadata"].get("deletionTimestamp"))
        replicas = job["spec"].get("replicas", 0)
        if not deleting:
            self.set_finalizer(job, True)
        active = [p for p in pods if not done(p)]
        ended, phase = self.outcome(pods, replicas)
        release = (deleting or ended or replicas == 0) and not active
        return deleting, replicas, active, ended, phase, release

    def reconcile_raw(self, job, pods):
        name, uid = job["metadata"]["name"], job["metadata"]["uid"]
        claim_name = job["spec"]["claim"]
        deleting, replicas, active, ended, phase, release = self.entry_lifecycle(job, pods)
        claim = self.get_claim(claim_name)
        entry = {"apiGroup": GROUP, "resource": PLURAL, "name": name, "uid": uid}
        held = bool(claim) and any(e.get("uid") == uid for e in (claim.get("status") or {}).get("reservedFor") or [])
        if claim:
            allocated = bool((claim.get("status") or {}).get("allocation"))
            if release:
                self.write_entries(job, claim)
            elif allocated and not claim["metadata"].get("deletionTimestamp"):
                self.write_entries(job, claim, keep_uid=uid, add=entry)
        if deleting:
            self.stop_owned_pods(job, pods)
            if release and (not held or not claim):
                self.set_finalizer(job, False)
            return
        want = 0 if ended else replicas
        # Each pod gets an entry next to ours and the list holds at most 256 (C13): pods that
        # do not fit would wait Pending for ever, so no more run than fit, and we say so.
        names = {p.metadata.name for p in pods}
        entries = ((claim or {}).get("status") or {}).get("reservedFor") or []
        others = [e for e in entries if e.get("uid") != uid and not (e.get("resource") == "pods" and e.get("name") in names)]
        room = RESERVED_FOR_MAX_SIZE - 1 - len(others)
        succeeded = sum(1 for p in pods if phase_of(p) == "Succeeded")
        if held and want - succeeded > room:
            self.event(job, "ReservationLimit", f"spec.replicas {replicas} does not fit ResourceClaim {claim_name}: "
                       f"status.reservedFor holds at most {RESERVED_FOR_MAX_SIZE} entries, so at most {room} pods run at once")
        # One pod first (it gets the claim allocated); the rest once our entry is in (C2).
        limit = min(want, max(room, 0)) if held else min(want, 1)
        self.sync_pods(job, pods, want, limit, self.pod_spec({"resourceClaimName": claim_name}))
        self.claim_status(job, phase if ended else "Running", held, release, claim_name, len(active))

    def reconcile_w(self, job, pods):
        name, uid = job["metadata"]["name"], job["metadata"]["uid"]
        template = job["spec"]["claim"]
        claim_name = f"{name}-{template}"
        deleting, replicas, active, ended, phase, release = self.entry_lifecycle(job, pods)
        claim = self.get_claim(claim_name)
        if claim:
            declared = ((claim.get("spec") or {}).get("reservedFor") or {}).get("uid")
            owners = [o for o in claim["metadata"].get("ownerReferences") or [] if o.get("controller")]
            if not declared and owners and owners[0]["uid"] == uid:
                return self.unsupported(job)
            if declared != uid:
                # An earlier job's claim (C12): its entry goes once its pods are done, then the
                # claim, and only then is ours created.
                old_active = [p for p in active
                              if not any(o.uid == uid for o in (p.metadata.owner_references or []))]
                if not old_active:
                    self.write_entries(job, claim, keep_uid=uid)
                    if not (claim.get("status") or {}).get("reservedFor") and not claim["metadata"].get("deletionTimestamp"):
                        ignore((404, 409), self.custom.delete_namespaced_custom_object, *RESOURCE, self.ns,
                               "resourceclaims", claim_name)
                if deleting:
                    self.stop_owned_pods(job, pods)
                    if not active:
                        self.set_finalizer(job, False)
                    return
                self.set_status(job, "Pending", False, "Waiting",
                                f"waiting for the previous job's ResourceClaim {claim_name} to go")
                return
        if not claim and not release and not ended and not deleting:
            template_obj = self.custom.get_namespaced_custom_object(*RESOURCE, self.ns, "resourceclaimtemplates", template)
            spec = dict(template_obj["spec"]["spec"])
            spec["reservedFor"] = {"apiGroup": GROUP, "resource": PLURAL, "name": name, "uid": uid}
            body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": claim_name, "labels": (template_obj["spec"].get("metadata") or {}).get("labels"),
                                 "ownerReferences": [self.owner(job)]},
                    "spec": spec}
            claim = ignore((409,), self.custom.create_namespaced_custom_object, *RESOURCE, self.ns, "resourceclaims", body)
            if claim and not claim["spec"].get("reservedFor"):
                return self.unsupported(job)
        held = bool(claim) and any(e.get("uid") == uid for e in (claim.get("status") or {}).get("reservedFor") or [])
        if release and claim:
            self.write_entries(job, claim)  # only our own entry goes (C7, C8)
        if deleting:
            self.stop_owned_pods(job, pods)
            if release and (not held or not claim):
                self.set_finalizer(job, False)
            return
        if not claim:
            self.claim_status(job, phase if ended else "Running", False, True, claim_name, len(active))
            return
        want = 0 if ended else replicas
        # A claim being deleted takes no new consumers (C10).
        limit = 0 if claim["metadata"].get("deletionTimestamp") else want
        self.sync_pods(job, pods, want, limit, self.pod_spec({"resourceClaimName": claim_name}))
        self.claim_status(job, phase if ended else "Running", held, release, claim_name, len(active))

    def unsupported(self, job):
        self.event(job, "ReservationUnsupported", "the API server dropped the claim's spec.reservedFor "
                   "(is DRAReservedForWorkloads off?); no pods are created")
        self.set_status(job, "Blocked", False, "Unsupported", "the API server dropped the claim's spec.reservedFor")


def main():
    profile = os.environ.get("KPROOF_PROFILE")
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--profile":
        profile = args[1]
    elif args:
        sys.exit(f"usage: {sys.argv[0]} [--profile pg|raw|w]")
    if profile not in ("pg", "raw", "w"):
        sys.exit(f"--profile (or KPROOF_PROFILE) must be pg, raw or w, not {profile!r}")
    config.load_kube_config()
    ns = namespace()
    ctl = Controller(profile, ns)
    print(f"trainjob_controller.py: profile {profile}, namespace {ns}", file=sys.stderr)
    while True:
        try:
            jobs = ctl.custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]
            pods = ctl.core.list_namespaced_pod(ns, label_selector=JOB_LABEL).items
            for job in jobs:
                try:
                    ctl.reconcile(job, pods)
                except ApiException as e:
                    print(f"trainjob_controller.py: TrainJob {job['metadata']['name']}: {e.status} {e.reason}: {e.body}",
                          file=sys.stderr)
                except Exception as e:
                    print(f"trainjob_controller.py: TrainJob {job['metadata']['name']}: {type(e).__name__}: {e}",
                          file=sys.stderr)
        except ApiException as e:
            print(f"trainjob_controller.py: {e.status} {e.reason}", file=sys.stderr)
        except Exception as e:  # a response the client cannot read: log it, try again next pass
            print(f"trainjob_controller.py: {type(e).__name__}: {e}", file=sys.stderr)
        time.sleep(0.3)


if __name__ == "__main__":
    main()
