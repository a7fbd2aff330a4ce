# mirra's container image.
#
#   docker build -t mirra:dev .            (or: podman build / buildah bud)
#   docker buildx build --platform linux/amd64,linux/arm64 -t REPO/mirra:TAG .
#
# Offline, from a binary built here: scripts/build-image (the same layout,
# assembled with buildah from the local binary and Debian's packages).
#
# The runtime image holds only what mirra needs: the binary, the C runtime
# it links against, CA certificates, and a shell, because the consul Helm
# chart starts its sync-catalog container as
#   /bin/sh -ec "consul-k8s-control-plane sync-catalog ..."
# `consul-k8s-control-plane` is a link to `mirra`; invoked by that name,
# mirra behaves as consul-k8s's binary does for `sync-catalog`.

FROM docker.io/library/rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --profile dist --locked -p mirra \
 && install -D -m 0755 target/dist/mirra /out/mirra

FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/mirra /usr/local/bin/mirra
RUN ln -s mirra /usr/local/bin/consul-k8s-control-plane
# A fixed numeric user, so that runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
ENTRYPOINT []
CMD ["mirra", "--help"]
