#!/usr/bin/env python3
"""Renders every kustomization under packaging/k8s (the base and each overlay) with
`kubectl kustomize` and validates every object it makes, offline:

- built-in kinds against the Kubernetes OpenAPI schemas that the `kubernetes-validate`
  package carries (strict: an unknown field is an error), for the oldest and the newest
  Kubernetes version named below;
- the Prometheus Operator's PodMonitor against its CRD's schema, unknown fields refused (v1, with the field
  descriptions left out: tests/data/k8s/podmonitor.v1.schema.json, from
  prometheus-operator 0.93.0's example/prometheus-operator-crd);
- any other kind is an error (nothing here may go unchecked).

Run: python3 packaging/k8s/validate.py   (needs kubectl and `pip install kubernetes-validate`)
Prints one line per kustomization and object; exits 1 on the first kustomization that fails."""
import json, os, subprocess, sys

import jsonschema
import kubernetes_validate
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
VERSIONS = ["1.30.0", kubernetes_validate.latest_version()]
CRDS = {("monitoring.coreos.com/v1", "PodMonitor"):
        os.path.join(HERE, "../../tests/data/k8s/podmonitor.v1.schema.json")}


def kustomizations():
    for root, _, files in sorted(os.walk(HERE)):
        if "kustomization.yaml" in files:
            yield os.path.relpath(root, os.path.join(HERE, "../.."))


def closed(schema):
    """The schema with unknown fields refused, as `kubectl apply --validate=strict` does:
    the API server would prune them without a word."""
    if isinstance(schema, dict):
        schema = {k: closed(v) for k, v in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema["additionalProperties"] = False
    elif isinstance(schema, list):
        schema = [closed(v) for v in schema]
    return schema


def check(obj):
    """Problems with one rendered object: empty when it validates."""
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key in CRDS:
        schema = closed(json.load(open(CRDS[key])))
        return [f"{key[1]}: {e.message} at {'/'.join(map(str, e.absolute_path))}"
                for e in jsonschema.Draft7Validator(schema).iter_errors(obj)]
    problems = []
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            return [f"{key[1]} ({key[0]}): no schema to check it against"]
        except kubernetes_validate.ValidationError as e:
            path = "/".join(map(str, e.path))
            problems.append(f"Kubernetes {version}: {e.message} at {path}")
    return problems


def main():
    failed = False
    for k in kustomizations():
        out = subprocess.run(["kubectl", "kustomize", k], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{k}: kubectl kustomize failed: {out.stderr.strip()}")
            failed = True
            continue
        objs = [o for o in yaml.safe_load_all(out.stdout) if o]
        for o in objs:
            name = f"{o.get('kind')}/{o.get('metadata', {}).get('name')}"
            problems = check(o)
            for p in problems:
                print(f"{k}: {name}: {p}")
            failed |= bool(problems)
        print(f"{k}: {len(objs)} objects: {', '.join(sorted(o['kind'] for o in objs))}")
    if failed:
        sys.exit(1)
    print(f"every object valid (Kubernetes {', '.join(VERSIONS)}; PodMonitor against its CRD)")


if __name__ == "__main__":
    main()
