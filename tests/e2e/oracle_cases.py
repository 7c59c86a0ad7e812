"""Seeded random cases for the differential test (test_upstream_oracle.py):
block combinations in the three embeddings the oracle (hack/oracle) judges,
creates and updates of each field. One seed gives the same cases every time.

- `leaf`: one leaf group at `spec.scheduling`, sized by `spec.replicas`;
- `composite`: a composite group at `spec.scheduling` over the leaf groups of
  `spec.replicatedJobs[*].scheduling` (each sized by its `replicas`);
- `job`: the spec is a batch/v1 JobSpec (`scheduling`, `parallelism`).

A case is {"id", "embedding", "object", "oldObject"}: the objects hold only
`spec` (the oracle adds what a Job needs; the test adds apiVersion, kind and
metadata for the webhook). Values come from pools that hold the edge cases:
every reference form of a claim, keys just inside and just outside the
formats, counts around 1 and the size, null members, unknown fields."""
from __future__ import annotations

import copy
import random
from typing import Any, Callable

EMBEDDINGS = ("leaf", "composite", "job")
ABSENT = object()       # a key left out of its object

COUNTS = [-1, 0, 1, 1, 2, 2, 3, 4, 8, 2**31 - 1]
SIZES = [ABSENT, 0, 1, 2, 2, 4, 4, 8]
GOOD_KEYS = ["topology.kubernetes.io/zone", "kubernetes.io/hostname", "rack", "example.com/rack", "a" * 63,
             "A_b.c-9", "x.y/Z"]
BAD_KEYS = ["", "not a key!", "k" * 64, "-rack", "example.com/", "/rack", "a/b/c", "Example.COM/rack",
            "a" * 254 + "/b", "rack_"]
GOOD_NAMES = ["gpu", "nic", "a" * 63, "0", "gpu-1"]
BAD_NAMES = ["", "GPU", "a" * 64, "gpu.x", "-gpu", "gpu_1", "gpu-"]
GOOD_REFS = ["shared-claim", "gpu-template", "a.b.c", "x" * 253, "0"]
BAD_REFS = ["", "Bad_Name", "a..b", "x" * 254, "-a", "a.", "UPPER"]


class Gen:
    def __init__(self, rng: random.Random):
        self.r = rng

    def pick(self, items: list) -> Any:
        return self.r.choice(items)

    def maybe(self, p: float) -> bool:
        return self.r.random() < p

    def count(self) -> Any:
        return self.pick(COUNTS + [ABSENT, ABSENT])

    # --- blocks ---------------------------------------------------------------------------------
    def policy(self, count_key: str = "minCount") -> Any:
        def gang() -> dict:
            n = self.count()
            return {} if n is ABSENT else {count_key: n}
        form = self.pick(["basic", "basic", "gang", "gang", "gang", "both", "empty", "null", "null-member",
                          "unknown"])
        if form == "basic":
            return {"basic": {}}
        if form == "gang":
            return {"gang": gang()}
        if form == "both":
            return {"basic": {}, "gang": gang()}
        if form == "empty":
            return {}
        if form == "null":
            return None
        if form == "null-member":
            return self.pick([{"basic": None, "gang": gang()}, {"basic": {}, "gang": None}, {"basic": None}])
        return self.pick([{"basic": {}, "preemptible": True}, {"gang": {**gang(), "timeoutSeconds": 30}},
                          {"basic": {"strict": True}}])

    def constraints(self) -> Any:
        def entry() -> dict:
            form = self.pick(["good", "good", "good", "bad", "none", "unknown"])
            if form == "none":
                return {}
            if form == "unknown":
                return {"key": self.pick(GOOD_KEYS), "weight": 1}
            return {"key": self.pick(GOOD_KEYS if form == "good" else BAD_KEYS)}
        form = self.pick(["one", "one", "one", "two", "empty-list", "empty", "null"])
        if form == "empty":
            return {}
        if form == "null":
            return None
        n = {"one": 1, "two": 2, "empty-list": 0}[form]
        return {"topology": [entry() for _ in range(n)]}

    def disruption(self) -> Any:
        return self.pick([{"single": {}}, {"single": {}}, {"all": {}}, {"all": {}}, {"all": {}},
                          {"single": {}, "all": {}}, {}, None, {"all": None}, {"single": None, "all": {}},
                          {"all": {}, "some": {}}])

    def claim(self, taken: list[str]) -> dict:
        out: dict = {}
        if taken and self.maybe(0.15):
            out["name"] = self.pick(taken)                         # a repeated name
        elif self.maybe(0.1):
            pass                                                   # no name at all
        else:
            out["name"] = self.pick(GOOD_NAMES * 3 + BAD_NAMES)
        if "name" in out:
            taken.append(out["name"])

        def ref() -> Any:
            return self.pick(GOOD_REFS * 3 + BAD_REFS + [None])
        form = self.pick(["name", "name", "template", "template", "both", "neither"])
        if form in ("name", "both"):
            out["resourceClaimName"] = ref()
        if form in ("template", "both"):
            out["resourceClaimTemplateName"] = ref()
        if self.maybe(0.03):
            out["shared"] = True                                   # an unknown field
        return out

    def claims(self) -> Any:
        form = self.pick(["some", "some", "some", "empty", "null", "five"])
        if form == "empty":
            return []
        if form == "null":
            return None
        taken: list[str] = []
        n = 5 if form == "five" else self.r.randint(1, 4)
        return [self.claim(taken) for _ in range(n)]

    def leaf(self, claims: bool = True) -> dict:
        out = {}
        for key, make, p in (("schedulingPolicy", self.policy, 0.8), ("schedulingConstraints", self.constraints, 0.35),
                             ("disruptionMode", self.disruption, 0.55), ("resourceClaims", self.claims, 0.4)):
            if (key != "resourceClaims" or claims) and self.maybe(p):
                out[key] = make()
        return out

    def composite(self) -> dict:
        out = {}
        if self.maybe(0.85):
            out["schedulingPolicy"] = self.policy("minGroupCount")
        if self.maybe(0.3):
            out["schedulingConstraints"] = self.constraints()
        if self.maybe(0.5):
            out["disruptionMode"] = self.disruption()
        return out

    # --- objects --------------------------------------------------------------------------------
    def sized(self, body: dict, key: str) -> dict:
        size = self.pick(SIZES)
        if size is not ABSENT:
            body[key] = size
        return body

    def child(self, i: int) -> dict:
        body = self.sized({"name": f"job-{i}"}, "replicas")
        if self.maybe(0.85):
            body["scheduling"] = self.leaf()
        return body

    def spec(self, embedding: str) -> dict:
        if embedding == "leaf":
            return self.sized({"scheduling": self.leaf()} if self.maybe(0.95) else {}, "replicas")
        if embedding == "composite":
            spec: dict = {"replicatedJobs": [self.child(i) for i in range(self.pick([0, 1, 1, 2, 2, 3]))]}
            if self.maybe(0.9):
                spec["scheduling"] = self.composite()
            return spec
        spec = {"scheduling": self.leaf()} if self.maybe(0.9) else {}
        return self.sized(spec, "parallelism")

    # --- updates: one field (sometimes two) of the stored object changed -------------------------
    def changed(self, embedding: str, old: dict) -> dict:
        new = copy.deepcopy(old)
        for _ in range(1 if self.maybe(0.8) else 2):
            self.pick(self._changes(embedding))(new)
        return new

    def _changes(self, embedding: str) -> list[Callable[[dict], None]]:
        def holder(spec: dict) -> dict:
            if embedding == "composite":
                jobs = spec.setdefault("replicatedJobs", [])
                if jobs and self.maybe(0.7):
                    return self.pick(jobs).setdefault("scheduling", {})
            return spec.setdefault("scheduling", {})

        def block(key: str, make: Callable[[], Any]) -> Callable[[dict], None]:
            def change(spec: dict) -> None:
                sched = holder(spec)
                if key in sched and self.maybe(0.25):
                    del sched[key]
                else:
                    sched[key] = make()
            return change

        def min_count(spec: dict) -> None:
            pol = holder(spec).get("schedulingPolicy")
            if isinstance(pol, dict) and isinstance(pol.get("gang"), dict):
                n = self.count()
                key = "minGroupCount" if "minGroupCount" in pol["gang"] else "minCount"
                if n is ABSENT:
                    pol["gang"].pop(key, None)
                else:
                    pol["gang"][key] = n
            elif isinstance(pol, dict):
                pol["gang"] = {"minCount": self.pick(COUNTS)}

        def toggle_basic(spec: dict) -> None:
            pol = holder(spec).get("schedulingPolicy")
            if isinstance(pol, dict):
                if pol.get("basic") is not None:
                    del pol["basic"]
                else:
                    pol["basic"] = {}

        def claims_edit(spec: dict) -> None:
            claims = holder(spec).get("resourceClaims")
            if not isinstance(claims, list) or not claims:
                holder(spec)["resourceClaims"] = self.claims()
                return
            how = self.pick(["reorder", "append", "drop", "rename", "reref"])
            i = self.r.randrange(len(claims))
            if how == "reorder":
                self.r.shuffle(claims)
            elif how == "append":
                claims.append(self.claim([c.get("name") for c in claims if isinstance(c.get("name"), str)]))
            elif how == "drop":
                claims.pop(i)
            elif how == "rename":
                claims[i]["name"] = self.pick(GOOD_NAMES + BAD_NAMES)
            else:
                key = self.pick(["resourceClaimName", "resourceClaimTemplateName"])
                claims[i][key] = self.pick(GOOD_REFS + BAD_REFS + [None])

        def size(spec: dict) -> None:
            key = "parallelism" if embedding == "job" else "replicas"
            target = spec
            if embedding == "composite" and spec.get("replicatedJobs"):
                target = self.pick(spec["replicatedJobs"])
            target.pop(key, None)
            self.sized(target, key)

        def holder_toggle(spec: dict) -> None:
            if "scheduling" in spec:
                del spec["scheduling"]
            else:
                spec["scheduling"] = self.composite() if embedding == "composite" else self.leaf()

        changes = [block("schedulingPolicy", self.policy), min_count, min_count, toggle_basic,
                   block("schedulingConstraints", self.constraints), block("disruptionMode", self.disruption),
                   claims_edit, claims_edit, size, holder_toggle]
        if embedding == "composite":
            def composite_policy(spec: dict) -> None:
                spec.setdefault("scheduling", {})["schedulingPolicy"] = self.policy("minGroupCount")

            def children(spec: dict) -> None:
                jobs = spec.setdefault("replicatedJobs", [])
                if jobs and self.maybe(0.5):
                    jobs.pop(self.r.randrange(len(jobs)))
                else:
                    jobs.append(self.child(len(jobs) + 10))
            changes += [composite_policy, children, children]
        return changes


def _json(value: Any) -> Any:
    """Drop the ABSENT markers (keys left out)."""
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items() if v is not ABSENT}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def generate(seed: int, count: int, first_id: int = 0) -> list[dict]:
    """`count` cases from `seed`: every embedding, about 40 % creates and 60 % updates
    (of which some leave the object unchanged and some replace it with an unrelated one)."""
    gen = Gen(random.Random(seed))
    out = []
    for i in range(count):
        embedding = EMBEDDINGS[i % len(EMBEDDINGS)]
        old = None
        if gen.maybe(0.6):
            old = {"spec": gen.spec(embedding)}
            roll = gen.r.random()
            new = old if roll < 0.05 else {"spec": gen.spec(embedding)} if roll < 0.12 else \
                {"spec": gen.changed(embedding, old["spec"])}
        else:
            new = {"spec": gen.spec(embedding)}
        out.append({"id": first_id + i, "embedding": embedding, "object": _json(copy.deepcopy(new)),
                    "oldObject": _json(copy.deepcopy(old)), "source": f"seed {seed} #{i}"})
    return out
