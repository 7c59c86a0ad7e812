"""The rules: the core scheduling.k8s.io objects (core.py, a mirror of
kube-apiserver plus this service's policies), the CRDs configured as targets
(crd.py with size, bounds and object-wide checks), and Pods (pods.py)."""
