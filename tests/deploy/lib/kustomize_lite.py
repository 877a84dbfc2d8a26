"""Renders a kustomization the way `kubectl kustomize` would, for the subset
deploy/k8s uses: `resources` (files and directories holding a
kustomization), `labels` (metadata only), `images` (newName/newTag) and
`patches` holding inline JSON 6902 operations with a kind/name target.

Only used where no kubectl of 1.21 or later is installed (Debian 12's
kubernetes-client is 1.20, whose kustomize v2.0.3 predates `patches` and
directories under `resources`). Anything outside the subset is an error, not
ignored.

    kustomize_lite.py DIR > rendered.yaml
"""
import copy
import os
import sys

import yaml

KNOWN_FIELDS = {"apiVersion", "kind", "resources", "labels", "images", "patches"}


def _pointer(path):
    return [part.replace("~1", "/").replace("~0", "~") for part in path.lstrip("/").split("/")]


def _apply_operation(doc, op):
    *parents, last = _pointer(op["path"])
    node = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    kind = op["op"]
    if isinstance(node, list):
        index = len(node) if last == "-" else int(last)
        if kind == "add":
            node.insert(index, copy.deepcopy(op["value"]))
        elif kind == "remove":
            del node[index]
        elif kind == "replace":
            node[index] = copy.deepcopy(op["value"])
        else:
            raise ValueError(f"unsupported patch op {kind!r}")
        return
    if kind in ("remove", "replace") and last not in node:
        raise KeyError(f"patch {kind} of missing path {op['path']}")
    if kind == "remove":
        del node[last]
    elif kind in ("add", "replace"):
        node[last] = copy.deepcopy(op["value"])
    else:
        raise ValueError(f"unsupported patch op {kind!r}")


def _set_images(doc, images):
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    for container in spec.get("containers", []) + spec.get("initContainers", []):
        name, _, tag = container["image"].partition(":")
        for image in images:
            if image["name"] == name:
                name = image.get("newName", name)
                tag = image.get("newTag", tag)
                container["image"] = f"{name}:{tag}" if tag else name


def render(directory):
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    unknown = set(kustomization) - KNOWN_FIELDS
    if unknown:
        raise ValueError(f"{directory}: kustomization fields {sorted(unknown)} not supported")
    docs = []
    for resource in kustomization.get("resources", []):
        path = os.path.join(directory, resource)
        if os.path.isdir(path):
            docs.extend(render(path))
        else:
            with open(path) as f:
                docs.extend(d for d in yaml.safe_load_all(f) if d)
    for label in kustomization.get("labels", []):
        for doc in docs:
            doc.setdefault("metadata", {}).setdefault("labels", {}).update(label["pairs"])
    for doc in docs:
        _set_images(doc, kustomization.get("images", []))
    for patch in kustomization.get("patches", []):
        target = patch["target"]
        matched = [d for d in docs
                   if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]]
        if not matched:
            raise ValueError(f"{directory}: patch target {target} matches nothing")
        for doc in matched:
            for op in yaml.safe_load(patch["patch"]):
                _apply_operation(doc, op)
    return docs


if __name__ == "__main__":
    yaml.safe_dump_all(render(sys.argv[1]), sys.stdout, sort_keys=False)
