"""`validate`: the webhook's rules on files, as a CI gate. Objects no rule
covers (a kind or version the config does not name, a manifest without
apiVersion/kind) are counted and listed, never silently passed: a CRD's new
version must not switch the gate off unnoticed (`--fail-on-skipped` makes them
fail the run). An input with no object at all is an error. With `--crd`, the
fields beside the blocks are checked against the CRD's schema too
(webhook/crd_fields.py), as kubectl's strict field validation does."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from webhook import crd_fields, engine, kinds, manifests
from webhook.cluster.view import StaticView
from webhook.command_input import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION, label, load, load_config
from webhook.config import Config
from webhook.enforcement import fails
from webhook.field import ROOT, invalid
from webhook.verdict import Verdict


def skip_reason(obj: dict, cfg: Config) -> str:
    """Why no rule judged this object, in the user's terms."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not api_version or not kind:
        return "no apiVersion/kind"
    group, _, version = str(api_version).rpartition("/")
    served = [t for t in cfg.targets if t.group == group and t.kind == kind]
    known = next((k for k in (*kinds.SCHEDULING_KINDS, kinds.POD) if k.group == group and k.kind == kind), None)
    versions = sorted({v for t in served for v in t.versions}) or (list(known.versions) if known else [])
    if versions:
        return f"no rules for {api_version} {kind} (the rules cover {', '.join(versions)})"
    return f"no rules for {kind}.{group or 'core'}: not a target of the configuration"


def crd_schemas(paths: list[str]) -> crd_fields.Schemas:
    """The schemas of the CRDs in `paths`; anything else there is a usage error."""
    docs, problems = load(paths)
    schemas = crd_fields.Schemas()
    why = [f"{p.file}: {p.message}" for p in problems]
    for doc in docs:
        reason = schemas.add_crd(doc.obj)
        if reason:
            kind, ident, _ = label(doc.obj)
            why.append(f"{doc.file}: {kind} {ident}: {reason}")
    if why or not schemas.by_version:
        for line in why or [f"{', '.join(paths)}: no CustomResourceDefinition"]:
            print(f"error: --crd {line}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    return schemas


def with_unknown_fields(verdict: Verdict, obj: dict, schemas: crd_fields.Schemas) -> Verdict:
    """The verdict plus the fields the object's CRD does not declare (once: the
    blocks' own schemas may have named some already)."""
    schema = schemas.for_object(obj)
    if schema is None:
        return verdict
    named = {str(e.field) for e in verdict.errors}
    extra = [e for e in crd_fields.unknown_fields(obj, schema) if str(e.field) not in named]
    return dataclasses.replace(verdict, errors=[*verdict.errors, *extra], checked=True)


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.profile)
    schemas = crd_schemas(args.crd) if getattr(args, "crd", None) else None
    docs, problems = load(args.filename)
    old_docs, old_problems = load(args.old) if args.old else ([], [])
    problems += old_problems
    if not docs and not problems:
        print(f"error: no objects in {', '.join(args.filename)}", file=sys.stderr)
        return EXIT_USAGE
    olds = {manifests.identity(d.obj): d.obj for d in old_docs}
    view = StaticView([d.obj for d in docs], authoritative=False)
    results = []
    for doc in docs:
        old = olds.get(manifests.identity(doc.obj)) if args.old else None
        if isinstance(doc.obj, dict):
            verdict = engine.validate(engine.Request.for_object(doc.obj, old), cfg, view, scope="cli")
            if schemas is not None:
                verdict = with_unknown_fields(verdict, doc.obj, schemas)
        else:
            verdict = Verdict(errors=[invalid(ROOT, doc.obj, "a manifest must be an object")])
        results.append((doc, verdict, None if verdict.checked else skip_reason(doc.obj, cfg)))
    skipped = [(doc, why) for doc, _, why in results if why]
    (_json if args.output == "json" else _text)(results, problems)
    failed = problems or any(fails(v.action, args.fail_on) for _, v, _ in results)
    return EXIT_VIOLATION if failed or (skipped and args.fail_on_skipped) else EXIT_OK


def _json(results, problems) -> None:
    out = []
    for doc, v, why in results:
        _, kind, ns, name = manifests.identity(doc.obj)
        out.append({"file": doc.file, "kind": kind, "namespace": ns or None, "name": name,
                    "allowed": v.allowed, "action": v.action, "skipped": why,
                    "errors": [e.as_dict() for e in v.errors], "warned": [e.as_dict() for e in v.warned],
                    "audited": [e.as_dict() for e in v.audits], "warnings": v.warnings})
    for p in problems:
        out.append({"file": p.file, "kind": None, "namespace": None, "name": None, "allowed": False, "action": "deny",
                    "skipped": None, "errors": [{"field": "", "type": "Invalid", "detail": p.message}], "warned": [],
                    "audited": [], "warnings": []})
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _text(results, problems) -> None:
    for p in problems:
        print(f"{p.file}: error: {p.message}")
    for doc, v, why in results:
        kind, ident, _ = label(doc.obj)
        prefix = f"{doc.file}: {kind} {ident}"
        for e in v.errors:
            print(f"{prefix}: {e}")
        for e in v.warned:
            print(f"{prefix}: Warning: {e}")
        for e in v.audits:
            print(f"{prefix}: Audit: {e}")
        for w in v.warnings:
            print(f"{prefix}: Warning: {w}")
        if v.allowed:
            state = f"skipped ({why})" if why else \
                "valid" if v.action is None else f"admitted with {v.action}-level violations (enforcement)"
            print(f"{prefix}: {state}")
    bad = sum(1 for _, v, _ in results if not v.allowed) + len(problems)
    skipped = sum(1 for _, _, why in results if why)
    checked = len(results) - skipped
    print(f"{checked} object(s) checked, {bad} invalid, {skipped} skipped (no rules)"
          + (": --fail-on-skipped makes these fail" if skipped else ""), file=sys.stderr)
