"""The foreign PodGroup dialects, Coscheduling and Volcano (issue 31, docs/bridge.md): what
the bridge knows of them, as data and pure functions of dicts (no I/O, no threads), so
the rules, the mutation, the registration, `validate`, `audit` and `explain` read them
without the bridge's running part (webhook/bridge/: the reconciler under its Lease).

- dialects.py   the two foreign PodGroup APIs as data: group, version, the Pod key that
                names a group, what has an in-tree equivalent and what has none
- mirror.py     foreign PodGroup -> the in-tree PodGroup that mirrors it, and what the
                reconciler does about one group
- status.py     the in-tree group's state -> the foreign PodGroup's status
- pods.py       the Pod side: the foreign key as a way to name the group (BRG-3), the
                schedulerName hand-off (BRG-4); the join that waits for a mirror is
                webhook/mutation/foreign_join.py
- admission.py  the warnings on a foreign PodGroup's create (BRG-1), the webhook rules
"""
