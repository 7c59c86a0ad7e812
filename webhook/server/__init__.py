"""The HTTP shell around the engine: Flask routes, metrics, logs, gunicorn."""
