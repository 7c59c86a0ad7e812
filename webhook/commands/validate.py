"""`validate`: the webhook's rules on files, as a CI gate.

What is judged is decided per apiVersion and kind before any rule runs
(webhook.validate.coverage): a ConfigMap costs a lookup. Skipped means suspicious only
(a configured kind at a version the config does not cover, an object without
apiVersion/kind: `--fail-on-skipped` fails those); unrelated kinds are counted
apart, and `--skip` adds kinds to them. An input with no object at all is an
error. Unknown fields are named as kubectl's strict field validation names
them (webhook/schemas/unknown_fields.py): the core kinds' always, a target's with
`--crd` (its CRD's schema). Many objects are judged on several cores (parallel_judging). The output formats are webhook/validate/output/."""
from __future__ import annotations

import argparse
import sys

from webhook import collector, engine, manifests
from webhook.validate import coverage, parallel_judging
from webhook.view import StaticView
from webhook.command_input import EXIT_OK, EXIT_USAGE, config_args, label, load, load_config, package_version
from webhook.field import ROOT, invalid
from webhook.schemas import unknown_fields
from webhook.validate.output import FORMATS, render
from webhook.validate.output.model import SKIPPED, UNRELATED, Report, Result, judged
from webhook.verdict import Verdict


def add_parser(subparsers) -> argparse.ArgumentParser:
    v = subparsers.add_parser("validate", help="validate manifests offline with the webhook's rules")
    v.add_argument("-f", "--filename", action="extend", nargs="+", required=True, metavar="PATH",
                   help="files or directories (YAML, multi-document, or JSON); repeatable; - for stdin")
    v.add_argument("--old", action="append", metavar="PATH",
                   help="the stored objects: judge -f as an UPDATE of the object with the same kind/namespace/name")
    v.add_argument("--crd", action="append", metavar="PATH",
                   help="CustomResourceDefinitions (file or directory; repeatable): fields their schemas do not "
                        "declare are errors, as kubectl's strict field validation says them")
    config_args(v)
    v.add_argument("--fail-on", choices=("deny", "warn", "audit"), default="deny",
                   help="exit 1 on violations enforced at or above this action (enforcement config; default deny)")
    v.add_argument("--fail-on-skipped", action="store_true",
                   help="exit 1 when an object is skipped: a configured kind at a version the config does not cover, "
                        "or no apiVersion/kind (unrelated kinds never fail)")
    v.add_argument("--skip", action="append", metavar="KIND",
                   help="kinds not to judge, counted as unrelated: KIND, KIND.GROUP or APIVERSION/KIND; "
                        "comma-separated, repeatable")
    v.add_argument("-o", "--output", choices=FORMATS, default="text",
                   help="text: a line per violation and per object, like kubectl; json: a record per object; "
                        "junit: JUnit XML; sarif: SARIF 2.1.0; github: GitHub Actions annotations")
    v.add_argument("-q", "--quiet", action="store_true",
                   help="only the violations and what fails the run (no valid, skipped or unrelated objects, "
                        "no summary)")
    v.set_defaults(func=run, exit_without_teardown=True)
    return v


def crd_schemas(paths: list[str]) -> unknown_fields.CrdSchemas:
    """The schemas of the CRDs in `paths`; anything else there is a usage error."""
    docs, problems = load(paths)
    schemas = unknown_fields.CrdSchemas()
    why = [f"{p.where}: {p.message}" for p in problems]
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


def judge(docs: list[manifests.Document], args: argparse.Namespace, cfg, schemas, olds: dict) -> list[Result]:
    classify = coverage.Classifier(cfg, coverage.parse_skip(args.skip)).of
    view = StaticView([d.obj for d in docs], authoritative=False)

    def one(doc: manifests.Document) -> Result:
        obj = doc.obj
        if not isinstance(obj, dict):
            return judged(doc, Verdict(errors=[invalid(ROOT, obj, "a manifest must be an object")]), args.fail_on)
        found = classify(obj)
        if found.state == coverage.JUDGED:
            old = olds.get(manifests.identity(obj)) if args.old else None
            verdict = engine.validate(engine.Request.for_object(obj, old), cfg, view, scope="cli")
            verdict = unknown_fields.added(verdict, obj, schemas)
            if verdict.checked:
                return judged(doc, verdict, args.fail_on, found.warns)
            return Result(doc, UNRELATED, verdict, f"{obj.get('kind')} is judged on create only")  # a Pod
        if found.state == coverage.SKIPPED:
            return Result(doc, SKIPPED, reason=found.reason, fails=args.fail_on_skipped)
        return Result(doc, UNRELATED, reason=found.reason, hint=found.profile)

    return parallel_judging.judge_all(docs, one)


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
    # Judging and reporting add a result per object: the cyclic collector walking everything
    # again and again was a third of their time at 100,000.
    with collector.paused():
        report = Report(judge(docs, args, cfg, schemas, olds), problems, args.fail_on, args.fail_on_skipped,
                        args.quiet, package_version())
        render(args.output, report, sys.stdout, sys.stderr)
    return report.summary.exit_code or EXIT_OK
