"""Where the building blocks live: the core scheduling.k8s.io objects
(core.py) and the CRDs configured as targets (crd.py)."""
