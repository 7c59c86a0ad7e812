"""`webhook-configs`: the Validating/MutatingWebhookConfiguration for a config
(webhook/registration.py), served at a URL or by a Service.
Exit codes: 0 printed, 2 a bad configuration, CA bundle, URL or Service."""
from __future__ import annotations

import argparse
import sys

from webhook.command_input import EXIT_OK, EXIT_USAGE, load_config, resource_args, target_resources


def add_parser(subparsers) -> argparse.ArgumentParser:
    w = subparsers.add_parser("webhook-configs",
                              help="print the Validating/MutatingWebhookConfiguration for this config")
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
    resource_args(w)
    w.add_argument("--timeout", type=int, default=5, choices=range(1, 31), metavar="SECONDS")
    w.set_defaults(func=run)
    return w


def webhook_url_problem(text: str) -> str | None:
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


def run(args: argparse.Namespace) -> int:
    import yaml

    from webhook.certificates.pem import BundleError, read_bundle
    from webhook.registration import Endpoint, configurations
    cfg = load_config(args.config)
    resources = target_resources(args, cfg.targets)
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
        wrong = webhook_url_problem(args.url)
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
