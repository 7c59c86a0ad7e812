"""`workload-webhook explain`: why a gang waits, or what it runs with. For a Job,
a configured target object, a Workload, a PodGroup or a CompositePodGroup in a
live cluster: the tree from the owner to its Workload, CompositePodGroups and
PodGroups, each with policy, minCount, members joined / bound / pending, the
scheduler's last reason, its claims (the claim generated for the group, allocated
or not, reserved for whom, the members that reference it and those that would get
a claim of their own) and who set what.

One job per module: `reader` lists the objects (GETs only), `tree` builds the
tree from them (pure), `groups` and `provenance` are the tree's per-PodGroup and
managedFields parts, `text` and `jsonout` render it; the command is
webhook/commands/explain.py."""
