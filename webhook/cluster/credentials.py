"""Where a command finds its cluster: the one lookup of the CLI (`audit`,
`check`, `explain`) and of `serve`, in kubectl's order (client-go's
clientcmd loading rules):

1. `--kubeconfig FILE`: that file alone, which must exist;
2. else `$KUBECONFIG`, a list of files (`:`-separated) merged as kubectl
   merges them: missing files are skipped, the first file to set a cluster,
   user, context or `current-context` wins;
3. else `~/.kube/config`;
4. only when none of these names a context to use: the Pod's ServiceAccount
   (in-cluster), when KUBERNETES_SERVICE_HOST/PORT are set and its token is
   mounted.

So a CI runner Pod that is given a kubeconfig talks to that cluster, not to
its own as its ServiceAccount. `serve --cluster kubeconfig` stops after 3,
`--cluster in-cluster` is 4 alone. Every failure is a CredentialsError with a
one-line reason."""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from webhook.view import ClusterUnavailable

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
HOME_KUBECONFIG = os.path.join("~", ".kube", "config")
MODES = ("auto", "kubeconfig", "in-cluster", "disabled")


class CredentialsError(ClusterUnavailable):
    """No usable cluster configuration (the message is one line, naming the file)."""


@dataclass(frozen=True)
class ClusterConfig:
    """The configuration a lookup found: kubeconfig files and a context, or in-cluster."""
    source: str                          # "kubeconfig" | "in-cluster"
    files: tuple[str, ...] = ()
    context: str | None = None
    namespace: str | None = None         # the context's namespace, or the ServiceAccount's
    merged: Any = field(default=None, compare=False, repr=False)   # kube_config.KubeConfigMerger

    def describe(self) -> str:
        if self.source == "in-cluster":
            return "in-cluster (the Pod's ServiceAccount)"
        return f"kubeconfig {', '.join(self.files)} (context {self.context})"


def kubeconfig_files(kubeconfig: str | None, environ: Mapping[str, str]) -> tuple[list[str], str]:
    """(the kubeconfig files in precedence order, where they came from)."""
    if kubeconfig:
        return [kubeconfig], "--kubeconfig"
    listed = environ.get("KUBECONFIG", "")
    if listed:
        return list(dict.fromkeys(p for p in listed.split(os.pathsep) if p)), "$KUBECONFIG"
    return [os.path.expanduser(HOME_KUBECONFIG)], "~/.kube/config"


def _merge(files: list[str]):
    """The files merged as kubectl merges them; (merger, files read, current-context)."""
    import yaml
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KubeConfigMerger
    merger = KubeConfigMerger("")
    current = None
    for path in files:
        full = os.path.expanduser(path)
        try:
            with open(full, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            continue                      # kubectl skips a listed file that does not exist
        except (OSError, UnicodeDecodeError) as exc:
            raise CredentialsError(f"kubeconfig {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if not text.strip():
            continue                      # an empty file adds nothing (kubectl reads it as an empty config)
        try:
            merger.load_config(full)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise CredentialsError(f"kubeconfig {path}: not valid YAML{where}") from None
        except (ConfigException, AttributeError, TypeError, KeyError):
            raise CredentialsError(f"kubeconfig {path}: not a kubeconfig (clusters, users, contexts)") from None
        merger.paths.append(full)
        # KubeConfigMerger lets the last file's current-context win; kubectl the first's.
        current = current or merger.config_files[full].get("current-context") or None
    merger.config_saved = copy.deepcopy(merger.config_files)   # what save_changes compares against
    return merger, merger.paths, current


def _from_kubeconfig(kubeconfig: str | None, context: str | None, environ: Mapping[str, str]) -> ClusterConfig | None:
    files, origin = kubeconfig_files(kubeconfig, environ)
    if kubeconfig and not os.path.exists(os.path.expanduser(kubeconfig)):
        raise CredentialsError(f"--kubeconfig {kubeconfig}: no such file")
    merger, read, current = _merge(files)
    name = context or current
    if not read or not name:
        return None                       # nothing to use: kubectl's "empty config"
    contexts = [c for c in (merger.config.value.get("contexts") or []) if isinstance(c.value, dict)]
    chosen = next((c.value for c in contexts if c.value.get("name") == name), None)
    if chosen is None:
        raise CredentialsError(f"context {name!r} is not in {origin} ({', '.join(read)})")
    spec = chosen.get("context")
    namespace = spec.get("namespace") if isinstance(spec, dict) else None
    return ClusterConfig("kubeconfig", tuple(read), name, namespace or None, merger)


def in_cluster_possible(environ: Mapping[str, str], account: str = SERVICE_ACCOUNT) -> bool:
    """client-go's test: the service host and port are set and the token is mounted."""
    return bool(environ.get("KUBERNETES_SERVICE_HOST")) and bool(environ.get("KUBERNETES_SERVICE_PORT")) \
        and os.path.isfile(os.path.join(account, "token"))


def _in_cluster(account: str) -> ClusterConfig:
    try:
        with open(os.path.join(account, "namespace"), encoding="utf-8") as f:
            namespace = f.read().strip() or None
    except OSError:
        namespace = None
    return ClusterConfig("in-cluster", namespace=namespace)


def find(mode: str = "auto", kubeconfig: str | None = None, context: str | None = None,
         environ: Mapping[str, str] | None = None, account: str = SERVICE_ACCOUNT) -> ClusterConfig | None:
    """The configuration to use, None when mode is auto and there is none (or mode
    is disabled); CredentialsError when what was asked for is not usable."""
    environ = os.environ if environ is None else environ
    if mode not in MODES:
        raise CredentialsError(f"unknown cluster mode {mode!r}: one of {', '.join(MODES)}")
    if mode == "disabled":
        return None
    if mode == "in-cluster":
        if not in_cluster_possible(environ, account):
            raise CredentialsError("in-cluster: not in a Pod (KUBERNETES_SERVICE_HOST/PORT unset or no "
                                   f"ServiceAccount token in {account})")
        return _in_cluster(account)
    found = _from_kubeconfig(kubeconfig, context, environ)
    if found is not None:
        return found
    files, origin = kubeconfig_files(kubeconfig, environ)
    if context:
        raise CredentialsError(f"context {context!r}: no kubeconfig found ({origin}: {', '.join(files)})")
    if mode == "auto" and in_cluster_possible(environ, account):
        return _in_cluster(account)
    if mode == "kubeconfig":
        raise CredentialsError(f"no kubeconfig with a current context ({origin}: {', '.join(files)})")
    return None


def client(found: ClusterConfig, environ: Mapping[str, str] | None = None, account: str = SERVICE_ACCOUNT):
    """An ApiClient for what `find` found (no request is made)."""
    from kubernetes import client as k8s
    from kubernetes.config.config_exception import ConfigException
    cfg = k8s.Configuration()
    try:
        if found.source == "in-cluster":
            from kubernetes.config.incluster_config import InClusterConfigLoader
            InClusterConfigLoader(token_filename=os.path.join(account, "token"),
                                  cert_filename=os.path.join(account, "ca.crt"),
                                  environ=os.environ if environ is None else environ).load_and_set(cfg)
            return k8s.ApiClient(cfg)     # the client's default retries, as the serving Pods always had
        from kubernetes.config.kube_config import KubeConfigLoader
        KubeConfigLoader(config_dict=found.merged.config, active_context=found.context, config_base_path=None,
                         config_persister=found.merged.save_changes).load_and_set(cfg)
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        raise CredentialsError(f"{found.describe()}: {reason}") from None
    cfg.retries = 0                       # a CLI run says at once that the server does not answer
    return k8s.ApiClient(cfg)


def api_client(mode: str = "auto", kubeconfig: str | None = None, context: str | None = None,
               environ: Mapping[str, str] | None = None):
    """find + client: an ApiClient, or None when mode is auto and there is no cluster."""
    found = find(mode, kubeconfig, context, environ)
    return client(found, environ) if found is not None else None


def no_cluster_message() -> str:
    return ("no cluster: give --kubeconfig, set $KUBECONFIG, write ~/.kube/config, or run in a Pod "
            "with a ServiceAccount")
