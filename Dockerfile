# workload-webhook: the image the Helm chart runs (charts/workload-webhook).
# BASE_IMAGE: any Debian-like image with python3.11 and pip in /usr/local
# (the e2e setup builds one with debootstrap, without a registry).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY webhook ./webhook
COPY schemas ./schemas
# The pinned closure (constraints.txt) so the image is what the tests installed.
RUN pip install --no-cache-dir --prefix=/install -c constraints.txt .

FROM ${BASE_IMAGE}
COPY --from=build /install /usr/local
# Non-root, as the chart's securityContext requires (runAsUser 65532).
USER 65532:65532
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
EXPOSE 8443
ENTRYPOINT ["workload-webhook"]
CMD ["serve", "--config", "/etc/workload-webhook/config.yaml"]
