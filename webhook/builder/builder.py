"""The Builder: validate a WorkloadItem tree, compile it into a Workload, and
materialize PodGroups and CompositePodGroups from the Workload's templates
(Go: builder.go and podgroup.go, NewBuilder / NewBuilderFromExistingWorkload).

The objects are JSON dicts as the API server stores and serves them: apiVersion,
kind, metadata (name, namespace, ownerReferences), spec, and (PodGroup,
CompositePodGroup) an empty status; fields Go always writes are present even when
null (a leaf template's `schedulingConstraints`, a composite Workload's
`podGroupTemplates`)."""
from __future__ import annotations

from webhook.builder.compile import _q, compile_spec, tree_error
from webhook.builder.types import BuildError, BuildOptions, InvocationError, WorkloadItem
from webhook.builder.validate import validate_item
from webhook.field import FieldError

WORKLOAD_API = "scheduling.k8s.io/v1beta1"
COMPOSITE_API = "scheduling.k8s.io/v1alpha3"
_OWNER_KEYS = ("apiVersion", "kind", "name", "uid")


def owner_reference(owner: dict) -> dict:
    """An ownerReference as Go writes one: the four required keys always, the flags when set."""
    out = {k: owner.get(k) or "" for k in _OWNER_KEYS}
    for flag in ("controller", "blockOwnerDeletion"):
        if owner.get(flag) is not None:
            out[flag] = owner[flag]
    return out


def controller_ref(owner: dict) -> dict:
    """A controller reference for `owner`, as metav1.NewControllerRef makes one."""
    return {**owner_reference(owner), "controller": True, "blockOwnerDeletion": True}


def _group(api_version: str) -> str:
    """The group of an apiVersion (Go: schema.ParseGroupVersion)."""
    if api_version in ("", "/"):
        return ""
    slashes = api_version.count("/")
    if slashes == 0:
        return ""
    if slashes == 1:
        return api_version.split("/", 1)[0]
    raise BuildError(f'invalid owner apiVersion "{api_version}": unexpected GroupVersion string: {api_version}')


def _meta(name: str, namespace: str, owners: list[dict] | None) -> dict:
    meta: dict = {}
    if name:
        meta["name"] = name
    if namespace:
        meta["namespace"] = namespace
    if owners:
        meta["ownerReferences"] = owners
    return meta


def _clone(value):
    """A deep copy of JSON data (dicts, lists, scalars): several times faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def _walk_composites(templates: list[dict] | None):
    for t in templates or ():
        yield t
        yield from _walk_composites(t.get("compositePodGroupTemplates"))


class Builder:
    """Turns an operator's WorkloadItem tree into the scheduler's objects.

        b = Builder(root, BuildOptions(name=..., namespace=..., owner=..., allowed_policies=ALL_POLICIES,
                                       allowed_disruption_modes=ALL_MODES))
        errors = b.validate()                     # [] when the user's blocks are good
        workload = b.build_workload()
        pod_group = b.new_pod_group("trainer-pg", "trainer-pgt-0")
    """

    def __init__(self, root: WorkloadItem | None, options: BuildOptions | None = None):
        self.root = root
        self.options = options or BuildOptions()
        self._workload: dict | None = None
        self._existing: dict | None = None

    @classmethod
    def from_existing_workload(cls, workload: dict, options: BuildOptions | None = None) -> "Builder":
        """A builder that only materializes PodGroups from a persisted Workload (Go:
        NewBuilderFromExistingWorkload); build_workload and validate are refused."""
        b = cls(None, options)
        b._existing = workload
        return b

    def validate(self, old_root: WorkloadItem | None = None) -> list[FieldError]:
        """The user's errors at the operator's own field paths: the blocks by the webhook's
        engine rules (unless options.disable_declarative_validation), then the allow-lists
        and basic-with-`all` on each resolved config. `old_root` (the stored tree) makes it an
        update. A broken tree (no root, empty or repeated names, leaf and composite blocks
        mixed) is the caller's bug: InvocationError."""
        if self._existing is not None:
            raise InvocationError("cannot validate a builder constructed from an existing workload")
        if self.root is None:
            raise InvocationError("invalid builder: missing root WorkloadItem")
        if old_root is not None and old_root.name != self.root.name:
            raise InvocationError(f'old root name "{old_root.name}" does not match new root name "{self.root.name}"')
        problem = tree_error(self.root)
        if problem:
            raise InvocationError(problem)
        return validate_item(self.root, old_root, self.options)

    def build_workload(self) -> dict:
        """The Workload the tree compiles to, owned by options.owner (required), with
        spec.controllerRef pointing at it; cached, so PodGroups share one compile.
        Raises BuildError with Go's message."""
        if self._existing is not None:
            raise BuildError("BuildWorkload is not available on a Builder created from an existing Workload: "
                             "it materializes from the supplied Workload")
        if self._workload is not None:
            return self._workload
        spec = compile_spec(self.root)
        owner = self.options.owner
        if owner is None:
            raise BuildError("a Workload must be owned by its controller for garbage collection")
        ref = owner_reference(owner)
        group = _group(ref["apiVersion"])
        controller = {"apiGroup": group} if group else {}
        controller.update(kind=ref["kind"], name=ref["name"])
        self._workload = {"apiVersion": WORKLOAD_API, "kind": "Workload",
                          "metadata": _meta(self.options.name, self.options.namespace, [ref]),
                          "spec": {"controllerRef": controller, **spec}}
        return self._workload

    def _source(self) -> dict:
        if self._existing is not None:
            return self._existing
        if self._workload is None:
            raise InvocationError("no Workload available: call BuildWorkload or use NewBuilderFromExistingWorkload first")
        return self._workload

    def _owners(self) -> list[dict] | None:
        return [owner_reference(self.options.owner)] if self.options.owner is not None else None

    def new_pod_group(self, name: str, template: str) -> dict:
        """A PodGroup from the Workload's top-level PodGroupTemplate `template`: its scheduling
        fields copied, workloadRef pointing back, in the Workload's namespace, owned by
        options.owner."""
        wl = self._source()
        templates = wl.get("spec", {}).get("podGroupTemplates") or []
        tmpl = next((t for t in reversed(templates) if t.get("name") == template), None)
        if tmpl is None:
            have = " ".join(t.get("name", "") for t in templates)
            raise InvocationError(f"podGroupTemplate {_q(template)} not found in workload "
                                  f"{_q(_name(wl))} (have [{have}])")
        return self._pod_group(wl, tmpl, name)

    def new_child_pod_group(self, name: str, template: str, parent: str) -> dict:
        """Beyond Go's API (which leaves a composite's children to the caller): a PodGroup from a
        PodGroupTemplate anywhere under the Workload's composites, its
        spec.parentCompositePodGroupName set to `parent` (the parent's CompositePodGroup)."""
        wl = self._source()
        tmpl = None
        for t in _walk_composites(wl.get("spec", {}).get("compositePodGroupTemplates")):
            tmpl = next((c for c in t.get("podGroupTemplates") or () if c.get("name") == template), tmpl)
        if tmpl is None:
            raise InvocationError(f"podGroupTemplate {_q(template)} not found under the composites of workload "
                                  f"{_q(_name(wl))}")
        pg = self._pod_group(wl, tmpl, name)
        pg["spec"] = {"parentCompositePodGroupName": parent, **pg["spec"]}
        return pg

    def _pod_group(self, wl: dict, tmpl: dict, name: str) -> dict:
        spec: dict = {"workloadRef": {"workloadName": _name(wl), "templateName": tmpl.get("name", "")},
                      "schedulingPolicy": _clone(tmpl.get("schedulingPolicy") or {})}
        for key in ("schedulingConstraints", "resourceClaims", "disruptionMode"):
            if tmpl.get(key) is not None and (key != "resourceClaims" or tmpl[key]):
                spec[key] = _clone(tmpl[key])
        if tmpl.get("priorityClassName"):
            spec["priorityClassName"] = tmpl["priorityClassName"]
        if tmpl.get("priority") is not None:
            spec["priority"] = tmpl["priority"]
        return {"apiVersion": WORKLOAD_API, "kind": "PodGroup",
                "metadata": _meta(name, _namespace(wl), self._owners()), "spec": spec, "status": {}}

    def new_composite_pod_group(self, name: str, template: str) -> dict:
        """A CompositePodGroup (v1alpha3) from the CompositePodGroupTemplate `template`, found
        anywhere in the Workload's composite tree. Its parent link and its children are the
        caller's to make."""
        wl = self._source()
        found = {}
        for t in _walk_composites(wl.get("spec", {}).get("compositePodGroupTemplates")):
            found[t.get("name")] = t
        tmpl = found.get(template)
        if tmpl is None:
            have = " ".join(t.get("name", "") for t in _walk_composites(wl.get("spec", {}).get(
                "compositePodGroupTemplates")))
            raise InvocationError(f"compositePodGroupTemplate {_q(template)} not found in workload "
                                  f"{_q(_name(wl))} (have [{have}])")
        spec: dict = {"workloadRef": {"workloadName": _name(wl), "templateName": tmpl.get("name", "")},
                      "schedulingPolicy": _clone(tmpl.get("schedulingPolicy") or {})}
        for key in ("schedulingConstraints", "disruptionMode"):
            if tmpl.get(key) is not None:
                spec[key] = _clone(tmpl[key])
        if tmpl.get("priorityClassName"):
            spec["priorityClassName"] = tmpl["priorityClassName"]
        if tmpl.get("priority") is not None:
            spec["priority"] = tmpl["priority"]
        return {"apiVersion": COMPOSITE_API, "kind": "CompositePodGroup",
                "metadata": _meta(name, _namespace(wl), self._owners()), "spec": spec, "status": {}}


def _name(wl: dict) -> str:
    return (wl.get("metadata") or {}).get("name", "")


def _namespace(wl: dict) -> str:
    return (wl.get("metadata") or {}).get("namespace", "")
