"""The `serve` command: server settings from the config file, flags and WW_*
environment variables (flags win, then the environment), certificate
provisioning (webhook.certificates.serving), and gunicorn.
Exit codes: 0 stopped, 2 a bad configuration or setting, a cluster or certificates not usable."""
from __future__ import annotations

import argparse
import logging
import os

from webhook import config as config_mod
from webhook import server_settings as server_settings_mod

from webhook.command_input import EXIT_OK, EXIT_USAGE

log = logging.getLogger("workload_webhook.serve")


def server_settings(cfg: config_mod.Config, args: argparse.Namespace, environ=None) -> config_mod.ServerSettings:
    """Flags over environment variables over the config file over defaults: the one
    ServerSettings the master and the workers are handed."""
    import dataclasses
    environ = os.environ if environ is None else environ
    try:
        values = server_settings_mod.given(args, environ)
    except server_settings_mod.BadValue as exc:
        raise config_mod.ConfigError(exc.where, [str(exc)]) from None
    merged = dataclasses.replace(cfg.server, **values)
    problems = config_mod.server_problems(merged)
    if problems:
        raise config_mod.ConfigError("server settings", problems)
    return merged


def add_parser(subparsers) -> argparse.ArgumentParser:
    sv = subparsers.add_parser("serve", help="run the admission webhook (gunicorn, TLS)")
    sv.add_argument("--config", metavar="FILE", help="configuration file (env WW_CONFIG)")
    server_settings_mod.add_flags(sv)       # one flag per server setting (webhook/server_settings.py)
    sv.add_argument("--kubeconfig", metavar="FILE",
                    help="kubeconfig for --cluster kubeconfig/auto (default: $KUBECONFIG, else ~/.kube/config)")
    sv.add_argument("--register", metavar="FILE",
                    help="register the webhook configurations in FILE once this Pod is ready and a ready endpoint of "
                         "--register-service (the chart's Service mode); revision from env WW_REGISTER_REVISION")
    sv.add_argument("--register-service", dest="register_service", metavar="NAMESPACE/NAME",
                    help="with --register: wait until this Pod (env POD_IP) is a ready endpoint of this Service")
    sv.add_argument("--register-owner", dest="register_owner", metavar="CLUSTERROLE",
                    help="with --register: the ClusterRole that owns the configurations (deleted with it)")
    sv.set_defaults(func=run)
    return sv


def run(args: argparse.Namespace) -> int:
    import dataclasses
    # a ConfigError (the file, a setting): exit 2 (webhook/cli.py)
    cfg = config_mod.load(args.config or os.environ.get(server_settings_mod.ENV_PREFIX + "CONFIG"))
    settings = server_settings(cfg, args)
    cfg = dataclasses.replace(cfg, server=settings)       # built once: what the master and every worker read
    _metrics_directory()
    from webhook.server import logs
    logs.setup(settings.logLevel, settings.logFormat)      # from here on, every line as logFormat says
    # args.kubeconfig alone: $KUBECONFIG (a list, as kubectl reads it) is read by webhook.cluster.credentials
    cfg = _with_cluster_gates(cfg, settings, args.kubeconfig)
    if cfg is None:
        return EXIT_USAGE
    from webhook.certificates.serving import provision
    certificates = provision(cfg, settings, args.kubeconfig)
    if certificates is None:
        return EXIT_USAGE
    registrar = None
    if getattr(args, "register", None):
        registrar = _registrar(args, settings, cfg.targets)
        if registrar is None:
            return EXIT_USAGE
    from webhook.server.gunicorn_app import Launch, WebhookServer
    WebhookServer(Launch(cfg, certificates, kubeconfig=args.kubeconfig,
                         registrar=registrar)).run()
    return EXIT_OK


def _metrics_directory() -> None:
    """Metrics of all workers add up through files in this directory (prometheus
    multiprocess mode, chosen when prometheus_client is imported: hence before anything
    serve runs that counts, the cluster's gates first); files of an earlier run (a restarted container keeps its
    emptyDir) would add up too."""
    import tempfile
    directory = os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR",
                                      tempfile.mkdtemp(prefix="workload-webhook-metrics-"))
    os.makedirs(directory, exist_ok=True)
    for stale in os.listdir(directory):
        if stale.endswith(".db"):
            os.unlink(os.path.join(directory, stale))


def _registrar(args, settings, targets=()):
    """--register: this service registers its own webhook configurations once it is
    ready and the cluster serves its targets as registered (webhook.cluster.registrar);
    None (and a message) when it cannot."""
    from webhook.cluster.cache import api_client
    from webhook.cluster.registrar import RegistrationError, from_flags
    from webhook.view import ClusterUnavailable
    if not args.register_owner:
        log.error("--register needs --register-owner (the ClusterRole that owns the registration)")
        return None
    try:
        api = api_client("kubeconfig" if settings.cluster == "kubeconfig" else "auto", args.kubeconfig)
        if api is None:
            raise ClusterUnavailable("--register needs a cluster (in-cluster or a kubeconfig)")
        return from_flags(api, args.register, args.register_owner, args.register_service, settings.port,
                          settings.bindAddress, settings.certDir, targets=targets)
    except (RegistrationError, ClusterUnavailable) as exc:
        log.error("%s", exc)
        return None


def _with_cluster_gates(cfg, settings, kubeconfig: str | None):
    """Core objects are judged with the API server's own gates (webhook.cluster.gates);
    the config's featureGates is for the offline CLI. None (and one line) when the
    cluster configuration asked for is not usable: the workers would only fail on it."""
    import dataclasses
    from webhook.cluster.cache import api_client
    from webhook.cluster.gates import serving_gates
    from webhook.view import ClusterUnavailable
    try:
        api = api_client(settings.cluster, kubeconfig)
    except ClusterUnavailable as exc:
        log.error("%s", exc)
        return None
    try:
        gates, how = serving_gates(api)
    finally:
        if api is not None:
            api.close()
    log.info("%s", how)
    return dataclasses.replace(cfg, featureGates=gates)
