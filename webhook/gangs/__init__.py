"""The live gang model: what each gang (a PodGroup with a gang policy) is doing now,
computed from the PodGroups and their member Pods, said as Events on the PodGroup and
as metrics. state.py is the state machine (pure), store.py what the watch keeps,
model.py the loop that runs under the bridge's Lease in the bridge's process
(webhook/server/bridge_process.py)."""
