"""Where the CLI and serve find their cluster (webhook/cluster/credentials.py):
kubectl's order, --kubeconfig, then $KUBECONFIG (a merged list), then
~/.kube/config, and in-cluster only when none of them names a context. The
ServiceAccount is a directory of real files here (token, ca.crt, namespace);
the client loaders are the kubernetes package's own."""
import json

import pytest
from cryptography.hazmat.primitives import serialization

from webhook.certificates.files import make_ca
from webhook.cluster import credentials
from webhook.cluster.credentials import CredentialsError, find


def _kubeconfig(path, contexts, current=None, namespace=None):
    """A kubeconfig with a cluster and user per context name (server https://NAME.example:6443)."""
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": c, "cluster": {"server": f"https://{c}.example:6443"}} for c in contexts],
           "users": [{"name": c, "user": {"token": f"token-{c}"}} for c in contexts],
           "contexts": [{"name": c, "context": {"cluster": c, "user": c, **({"namespace": namespace}
                                                                             if namespace else {})}}
                        for c in contexts]}
    if current:
        doc["current-context"] = current
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture
def account(tmp_path):
    """A mounted ServiceAccount, as the kubelet projects it."""
    d = tmp_path / "serviceaccount"
    d.mkdir()
    (d / "token").write_text("sa-token")
    (d / "namespace").write_text("ci-runners")
    ca, _ = make_ca()
    (d / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return str(d)


IN_POD = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def _env(tmp_path, **extra):
    """No ~/.kube/config (HOME is empty), plus what the test sets."""
    return {"HOME": str(tmp_path / "home"), **extra}


def test_a_kubeconfig_in_KUBECONFIG_wins_over_the_pods_own_service_account(tmp_path, account):
    kc = _kubeconfig(tmp_path / "ci", ["target"], current="target", namespace="ml")
    env = _env(tmp_path, KUBECONFIG=kc, **IN_POD)
    found = find("auto", environ=env, account=account)
    assert (found.source, found.files, found.context, found.namespace) == ("kubeconfig", (kc,), "target", "ml")
    api = credentials.client(found)
    assert api.configuration.host == "https://target.example:6443"
    assert api.configuration.api_key["BearerToken"] == "Bearer token-target"


def test_home_kubeconfig_wins_over_in_cluster_and_kubeconfig_flag_wins_over_both(tmp_path, account, monkeypatch):
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    _kubeconfig(home / ".kube" / "config", ["home"], current="home")
    monkeypatch.setenv("HOME", str(home))          # expanduser reads the process's HOME
    env = {"HOME": str(home), **IN_POD}
    assert find("auto", environ=env, account=account).context == "home"
    flag = _kubeconfig(tmp_path / "flag", ["flag"], current="flag")
    other = _kubeconfig(tmp_path / "env", ["env"], current="env")
    found = find("auto", kubeconfig=flag, environ={**env, "KUBECONFIG": other}, account=account)
    assert found.files == (flag,) and found.context == "flag"


def test_in_cluster_only_when_no_kubeconfig_names_a_context(tmp_path, account):
    found = find("auto", environ=_env(tmp_path, **IN_POD), account=account)
    assert (found.source, found.namespace) == ("in-cluster", "ci-runners")
    api = credentials.client(found, environ=IN_POD, account=account)
    assert api.configuration.host == "https://10.0.0.1:443"
    assert api.configuration.api_key["BearerToken"].lower() == "bearer sa-token"
    # kubectl's "empty config": a kubeconfig without a current-context does not stop the fallback
    bare = _kubeconfig(tmp_path / "bare", ["a"])
    assert find("auto", environ=_env(tmp_path, KUBECONFIG=bare, **IN_POD), account=account).source == "in-cluster"


def test_KUBECONFIG_is_a_list_merged_as_kubectl_merges_it(tmp_path, account):
    first = _kubeconfig(tmp_path / "first", ["one", "shared"], current="one")
    second = _kubeconfig(tmp_path / "second", ["two", "shared"], current="two")
    env = _env(tmp_path, KUBECONFIG=f"{tmp_path / 'missing'}:{first}:{second}:{first}")
    found = find("auto", environ=env, account=account)
    # missing files skipped, duplicates read once, and the FIRST file's current-context wins (the
    # kubernetes package's merger lets the last one win)
    assert found.files == (first, second) and found.context == "one"
    assert credentials.client(found).configuration.host == "https://one.example:6443"
    # a context only the second file has is there too
    assert find("auto", context="two", environ=env, account=account).context == "two"


def test_what_cannot_be_used_is_a_one_line_error_naming_the_file(tmp_path, account):
    env = _env(tmp_path, **IN_POD)
    with pytest.raises(CredentialsError, match=r"^--kubeconfig .*/absent: no such file$"):
        find("auto", kubeconfig=str(tmp_path / "absent"), environ=env, account=account)
    broken = tmp_path / "broken"
    broken.write_text("clusters: [\n  - name: a\n   bad")
    with pytest.raises(CredentialsError, match=r"kubeconfig .*/broken: not valid YAML \(line \d+\)"):
        find("auto", environ={**env, "KUBECONFIG": str(broken)}, account=account)
    kc = _kubeconfig(tmp_path / "kc", ["a"], current="a")
    with pytest.raises(CredentialsError, match=r"context 'nope' is not in \$KUBECONFIG"):
        find("auto", context="nope", environ={**env, "KUBECONFIG": kc}, account=account)
    with pytest.raises(CredentialsError, match="context 'nope': no kubeconfig found"):
        find("auto", context="nope", environ=env, account=account)
    dangling = tmp_path / "dangling"
    dangling.write_text(json.dumps({"current-context": "x", "contexts": [{"name": "x", "context": {"cluster": "gone"}}],
                                    "clusters": [], "users": []}))
    found = find("auto", environ={**env, "KUBECONFIG": str(dangling)}, account=account)
    with pytest.raises(CredentialsError) as err:
        credentials.client(found)
    assert "dangling" in str(err.value) and "\n" not in str(err.value)


def test_the_modes_of_serve(tmp_path, account):
    env = _env(tmp_path)
    assert find("auto", environ=env, account=account) is None          # serve without a cluster view
    assert find("disabled", environ={**env, **IN_POD}, account=account) is None
    with pytest.raises(CredentialsError, match="no kubeconfig with a current context"):
        find("kubeconfig", environ={**env, **IN_POD}, account=account)
    with pytest.raises(CredentialsError, match="in-cluster: not in a Pod"):
        find("in-cluster", environ=env, account=account)
    kc = _kubeconfig(tmp_path / "kc", ["a"], current="a")
    # in-cluster means the ServiceAccount, whatever kubeconfig is around
    assert find("in-cluster", environ={**env, **IN_POD, "KUBECONFIG": kc}, account=account).source == "in-cluster"
