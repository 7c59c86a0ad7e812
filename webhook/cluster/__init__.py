"""The service's view of the cluster: PodGroups and Workloads by namespace/name."""
