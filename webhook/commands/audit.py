"""The `audit` command: list, judge, print, optionally write reports.
Exit codes: 0 nothing at or above --fail-on, 1 violations at or above it,
2 usage, configuration or cluster errors."""
from __future__ import annotations

import argparse
import json
import sys

from webhook.command_input import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION, at_least, config_args, load_config


def add_parser(subparsers) -> argparse.ArgumentParser:
    a = subparsers.add_parser("audit", help="judge the objects already in a cluster; optionally write policy reports")
    config_args(a)
    a.add_argument("--kubeconfig", metavar="FILE",
                   help="default: $KUBECONFIG, else ~/.kube/config, else in-cluster (as kubectl)")
    a.add_argument("--report", action="store_true", help="write policy reports: one per namespace and a cluster report")
    a.add_argument("--report-format", choices=("openreports", "wgpolicy"), default="openreports")
    a.add_argument("--fail-on", choices=("deny", "warn", "audit", "never"), default="deny",
                   help="exit 1 on violations enforced at or above this action; never: exit 0 (a CronJob)")
    a.add_argument("--page-size", type=at_least(1), default=500, metavar="N",
                   help="objects per LIST page (memory follows it)")
    a.add_argument("--max-results", type=at_least(0), default=1000, metavar="N", help="results listed per report")
    a.add_argument("-o", "--output", choices=("text", "json"), default="text")
    a.set_defaults(func=run)
    return a


def run(args: argparse.Namespace) -> int:
    from webhook.audit import bridge as bridge_audit
    from webhook.audit import lister as lister_mod
    from webhook.audit import reports
    from webhook.audit.gates import audit_gates
    from webhook.audit.runner import judge_all
    from webhook.enforcement import fails
    cfg = load_config(args.config, args.profile)
    from webhook.cluster import credentials, discovery, failure
    from webhook.cluster.cache import ClusterCache
    api = None
    try:
        api = credentials.api_client("auto", args.kubeconfig)
        if api is None:
            print(f"error: {credentials.no_cluster_message()}", file=sys.stderr)
            return EXIT_USAGE
        cfg, gates_used = audit_gates(api, cfg)
        lister = lister_mod.Lister(api, page_size=args.page_size)
        view = ClusterCache(api, timeout=cfg.server.lookupTimeoutSeconds)   # GET on demand, no watch started

        served_as = discovery.served_resources(api, cfg.targets)

        def every_object():
            for res in lister_mod.resources(cfg, served_as):
                yield from lister.objects(res)
        outcome = judge_all(every_object(), cfg, view, args.max_results)
        foreign, mirrors, not_served = bridge_audit.read(api, args.page_size)     # jobs that need the bridge
        bridged = (bridge_audit.dependents(foreign, mirrors, cfg.bridge), bool(foreign))
        outcome.skipped = lister.skipped + (not_served if cfg.bridge.dialects else [])
        written = reports.write(api, outcome, args.report_format) if args.report else []
    except failure.errors() as exc:      # no kubeconfig, unreachable, TLS, 401, 403: one line, never a traceback
        print(f"error: the cluster could not be audited: {failure.line(failure.server_of(api), exc)}",
              file=sys.stderr)
        return EXIT_USAGE
    finally:
        if api is not None:
            api.close()
    print(gates_used, file=sys.stderr)      # which gates judged (after a cluster error: only that error)
    _print(outcome, written, args.output, bridged)
    worst = outcome.worst()
    return EXIT_VIOLATION if fails(worst, args.fail_on) else EXIT_OK


def _print(outcome, written: list[str], output: str, bridged: tuple = ([], False)) -> None:
    from webhook.audit import bridge as bridge_audit
    from webhook.enforcement import RANK
    rows = sorted(outcome.by_rule.items(), key=lambda kv: (RANK[kv[0][1]], kv[0][0]))
    if output == "json":
        json.dump({"objects": outcome.objects,
                   "summary": [{"rule": r, "action": a, "violations": n, "objects": outcome.objects_by_rule[(r, a)]}
                               for (r, a), n in rows],
                   "violations": [{"kind": j.kind, "namespace": j.namespace or None, "name": j.name, "action": j.action,
                                   "errors": [vars(v) for v in j.violations]}
                                  for ns in sorted(outcome.found) for j in outcome.found[ns]],
                   "notReported": sum(outcome.dropped.values()), "skipped": outcome.skipped, "reports": written,
                   "bridge": bridge_audit.as_json(*bridged)},
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    print(f"{'RULE':<10} {'ACTION':<7} {'VIOLATIONS':>10} {'OBJECTS':>8}")
    for (rule, action), n in rows:
        print(f"{rule:<10} {action:<7} {n:>10} {outcome.objects_by_rule[(rule, action)]:>8}")
    for ns in sorted(outcome.found):
        for j in outcome.found[ns]:
            ident = f"{ns}/{j.name}" if ns else j.name
            for v in j.violations:
                tag = f" ({v.rule})" if v.rule and not v.message.endswith(f"({v.rule})") else ""
                print(f"{j.kind} {ident}: {v.action}: {v.field}: {v.message}{tag}")
    if sum(outcome.dropped.values()):
        print(f"{sum(outcome.dropped.values())} more violations counted but not listed (--max-results)")
    for line in outcome.skipped + written + bridge_audit.lines(*bridged):
        print(line)
    print(f"{outcome.objects} object(s) audited, {outcome.violating} with violations", file=sys.stderr)
