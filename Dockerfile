# workload-webhook: the image the Helm chart runs (charts/workload-webhook).
#
# build: Debian bookworm with python3.11, its venv module and binutils. hack/build-images.sh
#   passes a debootstrap base that has them (built without a registry, nothing fetched here
#   but the Python packages); the release workflow passes debian:bookworm-slim pinned by
#   digest, and they are installed from snapshot.debian.org at DEBIAN_SNAPSHOT.
#   hack/image-rootfs.sh installs the pinned closure of constraints.txt into a venv and
#   gathers the final image's whole tree (what it leaves out, and why, is said there).
# final: FROM scratch, that tree alone: the interpreter's Debian packages and the venv;
#   no shell, no package manager, no pip or setuptools, no caches; user 65532.
# Reproducible: pinned base and Debian snapshot (the workflow), pinned Python closure and
# build tools, hash-based bytecode, and SOURCE_DATE_EPOCH for pip and the image's times.
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
ARG DEBIAN_SNAPSHOT=""
ARG SOURCE_DATE_EPOCH=0
ENV SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH} PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 LANG=C.UTF-8
RUN if ! { command -v python3.11 && command -v strip && python3.11 -c 'import ensurepip'; } >/dev/null 2>&1; then \
      if [ -n "${DEBIAN_SNAPSHOT}" ]; then \
        rm -f /etc/apt/sources.list.d/*; \
        printf 'deb [check-valid-until=no] http://snapshot.debian.org/archive/%s/%s %s main\n' \
          debian "${DEBIAN_SNAPSHOT}" bookworm debian "${DEBIAN_SNAPSHOT}" bookworm-updates \
          debian-security "${DEBIAN_SNAPSHOT}" bookworm-security > /etc/apt/sources.list; \
      fi; \
      apt-get update -q && \
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        python3.11 python3.11-venv binutils ca-certificates && \
      rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY webhook ./webhook
COPY schemas ./schemas
COPY hack/image-rootfs.sh /usr/local/bin/image-rootfs
RUN image-rootfs /src /rootfs

FROM scratch
COPY --from=build /rootfs /
ENV PATH=/opt/workload-webhook/bin:/usr/bin LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
# Non-root, as the chart's securityContext requires (runAsUser 65532).
USER 65532:65532
EXPOSE 8443 9090
ENTRYPOINT ["/opt/workload-webhook/bin/workload-webhook"]
CMD ["serve", "--config", "/etc/workload-webhook/config.yaml"]
