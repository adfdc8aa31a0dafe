#!/usr/bin/env python3
"""Generates fake-apiserver/src/registry/patch_meta.json: per built-in type, its fields with the
strategic-merge-patch and server-side-apply metadata (patch merge key and strategy, list type,
list map keys, map type) that k8s-openapi does not carry.

Source: the Kubernetes JSON schemas shipped in the PyPI package `kubernetes-validate`
(derived from kube-apiserver's OpenAPI, `x-kubernetes-*` extensions kept). Run offline from a
downloaded wheel:

    pip download --no-deps kubernetes-validate==1.37.0 -d /tmp/kv
    python3 fake-apiserver/tools/gen_patch_meta.py /tmp/kv/kubernetes_validate-1.37.0-py3-none-any.whl v1.37.0

Output: one JSON object, `{"types": {NAME: TYPE}}`, one type per line. NAME is the OpenAPI
definition name without its `io.k8s.` prefix. TYPE has `p` (properties: field name -> FIELD),
optionally `gvk` ([[group, version, kind], ...]) and `mt` (the type's own x-kubernetes-map-type).
FIELD has optionally `r` (the referenced type of the value, or of the items / map values),
`c` ("a" for a list, "m" for a map), `lt`, `lk`, `pk`, `ps`, `mt` (the x-kubernetes-*
extensions: list-type, list-map-keys, patch-merge-key, patch-strategy, map-type).
"""
import json
import sys
import zipfile

PREFIX = "io.k8s."


def short(ref):
    name = ref.rsplit("/", 1)[-1]
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def types_of(schema):
    t = schema.get("type")
    return t if isinstance(t, list) else [t] if t else []


def field(schema):
    out = {}
    if "$ref" in schema:
        out["r"] = short(schema["$ref"])
    elif "array" in types_of(schema):
        out["c"] = "a"
        items = schema.get("items") or {}
        if "$ref" in items:
            out["r"] = short(items["$ref"])
    elif isinstance(schema.get("additionalProperties"), dict):
        out["c"] = "m"
        values = schema["additionalProperties"]
        if "$ref" in values:
            out["r"] = short(values["$ref"])
    for ext, key in (
        ("x-kubernetes-list-type", "lt"),
        ("x-kubernetes-list-map-keys", "lk"),
        ("x-kubernetes-patch-merge-key", "pk"),
        ("x-kubernetes-patch-strategy", "ps"),
        ("x-kubernetes-map-type", "mt"),
    ):
        if ext in schema:
            out[key] = schema[ext]
    return out


def main():
    wheel, version = sys.argv[1], sys.argv[2]
    with zipfile.ZipFile(wheel) as z:
        doc = json.loads(z.read(f"kubernetes_validate/kubernetes-json-schema/{version}-local/_definitions.json"))
    defs = doc.get("$defs") or doc.get("definitions")
    types = {}
    for name in sorted(defs):
        d = defs[name]
        t = {"p": {p: field(s) for p, s in sorted((d.get("properties") or {}).items())}}
        gvks = d.get("x-kubernetes-group-version-kind")
        if gvks:
            t["gvk"] = [[g.get("group", ""), g["version"], g["kind"]] for g in gvks]
        if "x-kubernetes-map-type" in d:
            t["mt"] = d["x-kubernetes-map-type"]
        types[short(name)] = t
    lines = [json.dumps(n) + ":" + json.dumps(t, separators=(",", ":")) for n, t in types.items()]
    sys.stdout.write('{"source":' + json.dumps(f"kubernetes-validate {version}") + ',"types":{\n')
    sys.stdout.write(",\n".join(lines))
    sys.stdout.write("\n}}\n")


if __name__ == "__main__":
    main()
