"""Command line: `validate` and `mutate` run the very rules the server runs,
on files. Exit codes (docs/cli.md): 0 fine; 1 the answer is no (a violation or denial, a release not
admitting, the object asked about not there); 2 a usage, config, input or cluster error."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

import yaml

from webhook import completion, engine, explain, render_command, server_settings
from webhook.validate import command as validate_command
from webhook.certs_command import ip_address
from webhook.view import StaticView
from webhook.command_input import (EXIT_OK, EXIT_USAGE, EXIT_VIOLATION, exit_now, label as _label, load as _load,
                                   load_config as _load_config, profile as _profile)
from webhook.mutation.patch import apply


def cmd_mutate(args: argparse.Namespace) -> int:
    cfg = _load_config(args.config, args.profile)
    docs, problems = _load(args.filename)
    ctx_docs, ctx_problems = _load(args.context) if args.context else ([], [])
    for p in problems + ctx_problems:
        print(f"{p.where}: error: {p.message}", file=sys.stderr)
    if problems or ctx_problems:
        return EXIT_USAGE                  # an input that cannot be read or parsed, as a path that is not there
    view = StaticView([d.obj for d in ctx_docs], authoritative=True)
    status, outputs = EXIT_OK, []
    for doc in docs:
        if not isinstance(doc.obj, dict):
            print(f"{doc.file}: error: not an object", file=sys.stderr)
            status = EXIT_VIOLATION
            continue
        verdict = engine.mutate(engine.Request.for_object(doc.obj), cfg, view, scope="cli")
        kind, ident, _ = _label(doc.obj)
        for w in [*map(str, verdict.warned), *verdict.warnings]:
            print(f"{doc.file}: {kind} {ident}: Warning: {w}", file=sys.stderr)
        for e in verdict.audits:
            print(f"{doc.file}: {kind} {ident}: Audit: {e}", file=sys.stderr)
        if not verdict.allowed:
            for e in verdict.errors:
                print(f"{doc.file}: {kind} {ident}: {e}", file=sys.stderr)
            status = EXIT_VIOLATION
            continue
        ops = verdict.patch or []
        outputs.append(ops if args.output == "patch" else apply(doc.obj, ops))
    if args.output == "yaml":
        yaml.safe_dump_all(outputs, sys.stdout, sort_keys=False)
    else:
        payload = outputs[0] if len(outputs) == 1 else outputs
        json.dump(payload, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return status


def cmd_schemas(args: argparse.Namespace) -> int:
    from webhook.schemas import all_schemas
    if args.target:
        return _target_schema(args)
    schemas = all_schemas()
    if not args.name:
        for name in sorted(schemas):
            print(name)
        return EXIT_OK
    if args.name not in schemas:
        print(f"error: no schema {args.name!r}; one of: {', '.join(sorted(schemas))}", file=sys.stderr)
        return EXIT_USAGE
    json.dump(schemas[args.name], sys.stdout, indent=2)
    sys.stdout.write("\n")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from webhook.serve_command import cmd_serve as serve
    return serve(args)


def _at_least(low: int):
    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}")
        return value
    return parse


def _target_resources(args: argparse.Namespace, targets):
    """The targets' resource names (--kubeconfig: discovery; --crd: the CRDs; else the config),
    or None after saying which target has none (webhook.cluster.discovery)."""
    from webhook.cluster.discovery import resources_from
    from webhook.targets import UnknownResource
    crds, problems = _load(args.crd) if args.crd else ([], [])
    for p in problems:
        print(f"{p.where}: error: {p.message}", file=sys.stderr)
    if problems:
        return None
    try:
        return resources_from(targets, crds, args.kubeconfig)
    except UnknownResource as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
    except Exception as exc:         # an unreachable cluster, a refused discovery
        print(f"error: --kubeconfig {args.kubeconfig}: {(str(exc).splitlines() or [type(exc).__name__])[0]}",
              file=sys.stderr)
    return None


def _resource_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--crd", action="append", metavar="PATH",
                   help="the targets' CustomResourceDefinitions (file or directory; repeatable): their plurals")
    p.add_argument("--kubeconfig", metavar="FILE", help="ask this cluster's discovery for the targets' resources")


def cmd_vap(args: argparse.Namespace) -> int:
    from webhook.vap.targets import export
    cfg = _load_config(args.config, args.profile)
    resources = _target_resources(args, cfg.targets)
    if resources is None:
        return EXIT_USAGE
    out = export(cfg, args.name, tuple(sorted({"kube-system", args.namespace})), resources)
    for line in out.left:
        print(f"# left to the webhook: {line}")
    if args.helm_values:
        yaml.safe_dump({"vap": {"enabled": True, "mode": args.mode, "policies": out.objects,
                                "replacedKinds": sorted(out.expressible)}}, sys.stdout, sort_keys=False)
    else:
        yaml.safe_dump_all(out.objects, sys.stdout, sort_keys=False)
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from webhook import check_command
    return check_command.run(args)


def cmd_audit(args: argparse.Namespace) -> int:
    from webhook.audit import command
    return command.run(args, _load_config(args.config, args.profile))


def _target_schema(args: argparse.Namespace) -> int:
    from webhook.target_schema import for_target
    cfg = _load_config(args.config, args.profile)
    matches = [t for t in cfg.targets if args.target in (t.kind, f"{t.kind}.{t.group}")]
    if len(matches) != 1:
        known = ", ".join(f"{t.kind}.{t.group}" for t in cfg.targets) or "none (give --config or --profile)"
        why = "is configured twice: use KIND.GROUP" if matches else "is not a configured target"
        print(f"error: {args.target!r} {why}; targets: {known}", file=sys.stderr)
        return EXIT_USAGE
    target = matches[0]
    def denied(rule: str) -> bool:      # a rule relaxed to warn/audit must not fail an editor or kubeconform
        return cfg.enforcement.action(rule, target.kind, lambda: None, "cli") == "deny"
    schema = json.dumps(for_target(target, dis2=cfg.forbidAllWithBasic and denied("DIS-2"), owned=denied("TGT-6")),
                        indent=2) + "\n"
    if not args.out:
        sys.stdout.write(schema)
        return EXIT_OK
    # kubeconform's file naming for custom resources: {{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json
    os.makedirs(args.out, exist_ok=True)
    for version in target.versions or ("v1",):
        path = os.path.join(args.out, f"{target.kind.lower()}_{version}.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(schema)
        print(path)
    return EXIT_OK


def cmd_certs(args: argparse.Namespace) -> int:
    from webhook.certs_command import run
    return run(args)


def _webhook_url(text: str) -> str | None:
    """Why --url is not https://HOST[:PORT] (the service adds /validate and /mutate), or None."""
    from urllib.parse import urlsplit
    try:
        url = urlsplit(text)
        port = url.port
    except ValueError as exc:
        return str(exc)
    if url.scheme != "https":
        return "the API server calls webhooks over https only"
    if "@" in url.netloc:
        return "no user info"
    if not url.hostname or url.netloc.endswith(":") or port == 0:
        return "no host, or an empty or zero port"
    if url.path not in ("", "/") or "?" in text or "#" in text:
        return "no path, query or fragment: /validate and /mutate are added"
    return None


def cmd_webhook_configs(args: argparse.Namespace) -> int:
    from webhook.certificates.pem import BundleError, read_bundle
    from webhook.registration import Endpoint, configurations
    cfg = _load_config(args.config)
    resources = _target_resources(args, cfg.targets)
    if resources is None:
        return EXIT_USAGE
    try:
        ca = read_bundle(args.ca_bundle)
    except OSError as exc:
        print(f"error: {args.ca_bundle}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except BundleError as exc:
        print(f"error: --ca-bundle {args.ca_bundle}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.url:
        wrong = _webhook_url(args.url)
        if wrong:
            print(f"error: --url {args.url}: give https://HOST[:PORT]: {wrong}", file=sys.stderr)
            return EXIT_USAGE
        endpoint = Endpoint(ca, url=args.url)
    else:
        ns, _, name = (args.service or "").partition("/")
        if not ns or not name:
            print("error: give --url URL or --service NAMESPACE/NAME", file=sys.stderr)
            return EXIT_USAGE
        endpoint = Endpoint(ca, service_namespace=ns, service_name=name)
    yaml.safe_dump_all(configurations(cfg, endpoint, name=args.name, namespace=args.namespace,
                                      pod_failure_policy=args.pod_failure_policy, timeout=args.timeout,
                                      failure_policy=args.failure_policy, resources=resources),
                       sys.stdout, sort_keys=False)
    return EXIT_OK


def _config_args(p: argparse.ArgumentParser) -> None:
    """The configuration of the commands that judge objects: a file plus shipped profiles."""
    p.add_argument("--config", metavar="FILE", help="configuration file (docs/configuration.md)")
    p.add_argument("--profile", action="append", type=_profile, metavar="NAME",
                   help="add a shipped profile: jobset, leaderworkerset (lws), job-template:KIND.GROUP:JOBSPEC_PATH; "
                        "repeatable")


def _version() -> str:
    from webhook.command_input import package_version
    return package_version()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workload-webhook",
                                     description="Admission webhook for Kubernetes 1.37 Workload-Aware Scheduling")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    validate_command.add_parser(sub)

    m = sub.add_parser("mutate", help="print a Pod or target object as the mutating webhook would change it")
    m.add_argument("-f", "--filename", action="append", required=True, metavar="PATH",
                   help="the Pods or target objects to mutate (file, directory or - for stdin); repeatable")
    m.add_argument("--context", action="append", metavar="PATH",
                   help="PodGroups and Workloads that stand for the cluster; repeatable")
    _config_args(m)
    m.add_argument("-o", "--output", choices=("yaml", "json", "patch"), default="yaml",
                   help="the mutated object (yaml or json), or only the JSON Patch")
    m.set_defaults(func=cmd_mutate)

    sv = sub.add_parser("serve", help="run the admission webhook (gunicorn, TLS)")
    sv.add_argument("--config", metavar="FILE", help="configuration file (env WW_CONFIG)")
    server_settings.add_flags(sv)       # one flag per server setting (webhook/server_settings.py)
    sv.add_argument("--kubeconfig", metavar="FILE",
                    help="kubeconfig for --cluster kubeconfig/auto (default: $KUBECONFIG, else ~/.kube/config)")
    sv.add_argument("--register", metavar="FILE",
                    help="register the webhook configurations in FILE once this Pod is ready and a ready endpoint of "
                         "--register-service (the chart's Service mode); revision from env WW_REGISTER_REVISION")
    sv.add_argument("--register-service", dest="register_service", metavar="NAMESPACE/NAME",
                    help="with --register: wait until this Pod (env POD_IP) is a ready endpoint of this Service")
    sv.add_argument("--register-owner", dest="register_owner", metavar="CLUSTERROLE",
                    help="with --register: the ClusterRole that owns the configurations (deleted with it)")
    sv.set_defaults(func=cmd_serve)

    c = sub.add_parser("certs", help="generate or inspect certificates")
    csub = c.add_subparsers(dest="certs_command", required=True)
    cg = csub.add_parser("generate", help="write ca.crt/ca.key and tls.crt/tls.key; prints the CA path")
    cg.add_argument("--out", required=True, metavar="DIR")
    cg.add_argument("--dns", action="append", metavar="NAME", help="SAN DNS name; repeatable")
    cg.add_argument("--ip", action="append", type=ip_address, metavar="ADDR", help="SAN IP address; repeatable")
    cg.add_argument("--ca-dir", metavar="DIR", help="sign with the CA in DIR instead of a new one")
    cg.add_argument("--days", type=_at_least(1), default=90, metavar="N",
                    help="the serving certificate's validity in days; default 90")
    cg.add_argument("--ca-days", type=_at_least(1), default=None, metavar="N",
                    help="a new CA's validity in days; default 365")
    cg.add_argument("--force", action="store_true", help="replace certificates and keys already in --out")
    ci = csub.add_parser("inspect", help="print each certificate's subject, issuer, validity (days left), key type, "
                                         "SHA-256 fingerprint and SANs")
    ci.add_argument("file")
    c.set_defaults(func=cmd_certs)

    w = sub.add_parser("webhook-configs", help="print the Validating/MutatingWebhookConfiguration for this config")
    w.add_argument("--config", metavar="FILE")
    w.add_argument("--ca-bundle", required=True, metavar="FILE",
                   help="the PEM CA certificate(s) that signed the serving certificate (certificates only)")
    where = w.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="https://HOST[:PORT] of a webhook outside the cluster (no path: the service "
                                     "adds /validate and /mutate)")
    where.add_argument("--service", metavar="NAMESPACE/NAME", help="the webhook's Service")
    w.add_argument("--name", default="workload-webhook", help="name of both configurations")
    w.add_argument("--namespace", default="workload-webhook", help="the webhook's own namespace (never intercepted)")
    w.add_argument("--failure-policy", choices=("Fail", "Ignore"), default="Fail",
                   help="the validating webhooks of Workloads, PodGroups, CompositePodGroups and targets")
    w.add_argument("--pod-failure-policy", choices=("Fail", "Ignore"), default="Fail")
    _resource_args(w)
    w.add_argument("--timeout", type=int, default=5, choices=range(1, 31), metavar="SECONDS")
    w.set_defaults(func=cmd_webhook_configs)

    a = sub.add_parser("audit", help="judge the objects already in a cluster; optionally write policy reports")
    _config_args(a)
    a.add_argument("--kubeconfig", metavar="FILE",
                   help="default: $KUBECONFIG, else ~/.kube/config, else in-cluster (as kubectl)")
    a.add_argument("--report", action="store_true", help="write policy reports: one per namespace and a cluster report")
    a.add_argument("--report-format", choices=("openreports", "wgpolicy"), default="openreports")
    a.add_argument("--fail-on", choices=("deny", "warn", "audit", "never"), default="deny",
                   help="exit 1 on violations enforced at or above this action; never: exit 0 (a CronJob)")
    a.add_argument("--page-size", type=_at_least(1), default=500, metavar="N", help="objects per LIST page (memory follows it)")
    a.add_argument("--max-results", type=_at_least(0), default=1000, metavar="N", help="results listed per report")
    a.add_argument("-o", "--output", choices=("text", "json"), default="text")
    a.set_defaults(func=cmd_audit)

    ck = sub.add_parser("check", help="is a release admitting? (registered, and every endpoint denies a POL-2 probe "
                                      "sent as the API server sends it); the chart's helm test")
    ck.add_argument("--name", default="workload-webhook", help="the webhook configurations' name")
    ck.add_argument("--namespace", default="default", help="the namespace the probe objects name (nothing is created)")
    ck.add_argument("--kubeconfig", metavar="FILE",
                    help="default: $KUBECONFIG, else ~/.kube/config, else in-cluster (as kubectl)")
    ck.add_argument("--timeout", type=float, default=60, metavar="SECONDS", help="how long to wait; default 60")
    ck.set_defaults(func=cmd_check)

    vp = sub.add_parser("vap", help="print the targets' rules as ValidatingAdmissionPolicies + bindings (CEL)")
    _config_args(vp)
    vp.add_argument("--name", default="workload-webhook", help="prefix of the policies' names")
    vp.add_argument("--namespace", default="workload-webhook", help="the webhook's own namespace (left alone, with kube-system)")
    vp.add_argument("--helm-values", action="store_true", help="print the chart's `vap` values instead")
    vp.add_argument("--mode", choices=("replace", "alongside"), default="alongside",
                    help="with --helm-values: replace stops the webhook validating the exported kinds")
    _resource_args(vp)
    vp.set_defaults(func=cmd_vap)

    s = sub.add_parser("schemas", help="list the published JSON Schemas, or print one; --target: a target's schema")
    s.add_argument("name", nargs="?")
    s.add_argument("--target", metavar="KIND", help="the schema of a configured target or profile kind, blocks at their "
                                                   "paths (for editors and kubeconform)")
    _config_args(s)
    s.add_argument("--out", metavar="DIR", help="with --target: write KIND_VERSION.json per served version "
                                                "(kubeconform's naming) instead of printing")
    s.set_defaults(func=cmd_schemas)

    explain.add_parser(sub)
    render_command.add_parser(sub)
    completion.add_parser(sub, parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:          # argparse: 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        code = args.func(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    except BrokenPipeError:
        return EXIT_OK
    if argv is None and getattr(args, "exit_without_teardown", False):   # the process itself, not a test
        exit_now(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
