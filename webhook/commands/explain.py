"""The `explain` subcommand: arguments, then read -> build -> render.
Exit codes: 0 shown, 1 the object was not found (the answer is no, as kubectl get's), 2 usage
(a kind explain does not read), configuration or cluster errors (no kubeconfig, unreachable, TLS,
401, the object forbidden)."""
from __future__ import annotations

import argparse
import os
import sys

from webhook.command_input import EXIT_OK, EXIT_USAGE, load_config, profile as _profile

EXIT_NOT_FOUND = 1          # the answer is no: the object is not there

EPILOG = """examples:
  workload-webhook explain job/train -n ml
  workload-webhook explain podgroup train -n ml -o json
  workload-webhook explain trainjob/llama -n ml --config config.yaml
  workload-webhook explain podgroups.scheduling.x-k8s.io/train -n ml
"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    e = subparsers.add_parser(
        "explain", help="why a gang waits: the tree from a Job, target object, Workload or PodGroup to its Pods and "
                        "claims in a live cluster", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("object", metavar="KIND/NAME", help="job/NAME, workload/NAME, podgroup/NAME, "
                                                       "compositepodgroup/NAME, a configured target KIND/NAME, or a "
                                                       "Coscheduling or Volcano PodGroup: "
                                                       "podgroups.scheduling.x-k8s.io/NAME, "
                                                       "podgroups.scheduling.volcano.sh/NAME")
    e.add_argument("name", nargs="?", help="NAME, when KIND is given alone (kubectl style)")
    e.add_argument("-n", "--namespace", help="default: the kubeconfig context's namespace (in a Pod: its own), "
                                               "else default")
    e.add_argument("--kubeconfig", metavar="FILE", help="default: $KUBECONFIG, else ~/.kube/config, else in-cluster")
    e.add_argument("--context", help="kubeconfig context")
    e.add_argument("--config", metavar="FILE", help="configuration file: its targets can be explained")
    e.add_argument("--profile", action="append", type=_profile, metavar="NAME",
                   help="add a shipped profile's targets (jobset, leaderworkerset, job-template:...); repeatable")
    e.add_argument("--group-label", default=None, metavar="KEY",
                   help="the Pod label that names a group (default: the config's pods.groupLabel)")
    e.add_argument("-o", "--output", choices=("text", "json"), default="text")
    e.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text output; auto: when stdout is a terminal (and NO_COLOR is unset)")
    e.set_defaults(func=run)
    return e


def _split(args) -> tuple[str, str] | None:
    if args.name:
        return args.object, args.name
    kind, sep, name = args.object.partition("/")
    return (kind, name) if sep and kind and name else None


def _colour(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def run(args: argparse.Namespace) -> int:
    from webhook.explain import jsonout, reader, text, tree
    which = _split(args)
    if which is None:
        print("error: give KIND/NAME (or KIND NAME), e.g. job/train", file=sys.stderr)
        return EXIT_USAGE
    cfg = load_config(args.config, args.profile)       # a ConfigError: exit 2 (webhook/cli.py)
    label = args.group_label or cfg.groupLabel
    from webhook.cluster import credentials, discovery
    api = None
    try:
        found = credentials.find("auto", args.kubeconfig, args.context)
        if found is None:
            print(f"error: {credentials.no_cluster_message()}", file=sys.stderr)
            return EXIT_USAGE
        namespace = args.namespace or found.namespace or "default"
        api = credentials.client(found)
        targets = reader.target_kinds(cfg, discovery.served_resources(api, cfg.targets))
        objects, problems = reader.read(api, which[0], which[1], namespace, targets)
        result = tree.build(objects, which[0], which[1], namespace, group_label=label)
    except (credentials.CredentialsError, reader.ClusterError, reader.UnknownKind) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (reader.ReadError, tree.NotFound) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    finally:
        if api is not None:
            api.close()
    if args.output == "json":
        sys.stdout.write(jsonout.render(result, problems))
    else:
        sys.stdout.write(text.render(result, colour=_colour(args.color), problems=problems))
    return EXIT_OK
