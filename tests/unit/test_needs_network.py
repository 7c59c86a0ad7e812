"""The event loop's thread never waits for the API server: a view's network
call there raises NeedsNetwork (webhook/cluster/view.py), in any other thread
it goes ahead. The server then judges again in its lookup pool
(tests/server/test_unreachable_cluster.py shows it over a silent API server)."""
import threading

import pytest

from webhook.cluster import view


def test_network_calls_raise_only_in_a_thread_that_forbids_them():
    seen = {}

    def loop_thread():
        view.forbid_network_in_this_thread()
        try:
            view.network_call()
            seen["loop"] = "went ahead"
        except view.NeedsNetwork:
            seen["loop"] = "NeedsNetwork"

    t = threading.Thread(target=loop_thread)
    t.start()
    t.join()
    view.network_call()          # this thread never forbade it: no exception
    assert seen == {"loop": "NeedsNetwork"}


def test_needs_network_is_not_a_cluster_failure():
    # the engine degrades ClusterUnavailable to warnings; NeedsNetwork must reach the server untouched
    assert not issubclass(view.NeedsNetwork, view.ClusterUnavailable)
    with pytest.raises(view.NeedsNetwork):
        raise view.NeedsNetwork()
