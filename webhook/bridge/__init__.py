"""The bridge (issue 31): jobs written for the scheduler-plugins Coscheduling plugin or
for Volcano are gang-scheduled by kube-scheduler, unchanged (docs/bridge.md). This is
its running part; what it knows of the foreign APIs, pure, is webhook/foreign/.

- lease.py      one writer across replicas: a coordination.k8s.io/v1 Lease
- watch.py      the store each watched resource is kept in (the list-and-watch loop is
                webhook/cluster/watch.py, the service's one)
- loop.py       the reconcile loop under the Lease (run in a process of its own:
                webhook/server/bridge_process.py)
"""
