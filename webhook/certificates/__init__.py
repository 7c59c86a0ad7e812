"""Certificates, in one room: files.py (a development CA and serving
certificate, atomic writes, the SSL context that reloads them from disk),
secret.py (certificates kept in a Secret: renewal, CA rotation, the caBundle of
the webhook configurations, the CA-only ConfigMap), serving.py (what `serve`
serves with, and whether the renewal loop is alive)."""
