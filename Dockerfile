# workload-webhook: the image the Helm chart runs (charts/workload-webhook).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY webhook ./webhook
COPY schemas ./schemas
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
# Non-root, as the chart's securityContext requires (runAsUser 65532).
USER 65532:65532
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
EXPOSE 8443
ENTRYPOINT ["workload-webhook"]
CMD ["serve", "--config", "/etc/workload-webhook/config.yaml"]
