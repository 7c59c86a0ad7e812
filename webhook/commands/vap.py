"""`vap`: the targets' rules as ValidatingAdmissionPolicies and their bindings (CEL), or
the chart's `vap` values. Exit codes: 0 printed, 2 a bad configuration or resources unknown."""
from __future__ import annotations

import argparse
import sys

from webhook.command_input import EXIT_OK, EXIT_USAGE, config_args, load_config, resource_args, target_resources


def add_parser(subparsers) -> argparse.ArgumentParser:
    vp = subparsers.add_parser("vap", help="print the targets' rules as ValidatingAdmissionPolicies + bindings (CEL)")
    config_args(vp)
    vp.add_argument("--name", default="workload-webhook", help="prefix of the policies' names")
    vp.add_argument("--namespace", default="workload-webhook",
                    help="the webhook's own namespace (left alone, with kube-system)")
    vp.add_argument("--helm-values", action="store_true", help="print the chart's `vap` values instead")
    vp.add_argument("--mode", choices=("replace", "alongside"), default="alongside",
                    help="with --helm-values: replace stops the webhook validating the exported kinds")
    resource_args(vp)
    vp.set_defaults(func=run)
    return vp


def run(args: argparse.Namespace) -> int:
    import yaml

    from webhook.vap.targets import export
    cfg = load_config(args.config, args.profile)
    resources = target_resources(args, cfg.targets)
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
