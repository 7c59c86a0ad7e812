"""`workload-webhook audit`: the objects already in a cluster judged by the same
engine (lister: paginated listing; runner: judging and the summary; reports:
policy reports written back into the cluster)."""
