"""The bridge (issue 31): jobs written for the scheduler-plugins Coscheduling plugin or
for Volcano are gang-scheduled by kube-scheduler, unchanged (docs/bridge.md).

- dialects.py   the two foreign PodGroup APIs as data: group, version, the Pod key that
                names a group, what has an in-tree equivalent and what has none
- mirror.py     foreign PodGroup -> the in-tree PodGroup that mirrors it, and what the
                reconciler does about one group (pure)
- status.py     the in-tree group's state -> the foreign PodGroup's status (pure)
- pods.py       the Pod side: the foreign key as a way to name the group, the wait for a
                mirror, the schedulerName hand-off (pure but for the bounded wait)
- admission.py  the warnings on a foreign PodGroup's create
- lease.py      one writer across replicas: a coordination.k8s.io/v1 Lease
- watch.py      the store each watched resource is kept in (the list-and-watch loop is
                webhook/cluster/watch.py, the service's one)
- loop.py       the reconcile loop under the Lease (run in a process of its own:
                webhook/server/bridge_process.py)
"""
