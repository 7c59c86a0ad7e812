"""Mutations: Pods joining their pod group (pods.py) and defaults for target
CRDs (defaults.py). Each returns a mutated copy; patch.py turns the pair into
an RFC 6902 patch, so the patch only ever adds what the copy added."""
