import pytest

from tests.server.harness import REPO, Server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with Server(str(tmp_path_factory.mktemp("serve")), config=f"{REPO}/examples/config.yaml",
                extra=["--cluster", "disabled", "--max-body-bytes", "1048576"]) as s:
        yield s
