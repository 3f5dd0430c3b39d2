#!/usr/bin/env bash
# Build the zkpipe image without a Docker engine or an image registry: buildah from Debian's packages
# (apt-get install -y buildah debootstrap), as root, vfs storage, chroot isolation.
#
#   tools/container_build.sh [TAG]            default TAG: localhost/zkpipe:dev
#
# The base image is BASE_IMAGE when set (e.g. docker.io/library/debian:bookworm-slim where a registry
# answers); otherwise localhost/zkpipe-base:bookworm, made once from a debootstrap'd Debian bookworm
# (minbase, ~200 MB, a few minutes) in $ROOTFS (default /var/tmp/zkpipe-base/rootfs).
# Needs the network: Debian's mirror (apt in the Dockerfile) and PyPI (pip). Docker image format, so the
# HEALTHCHECK is kept (OCI's format has none).
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/zkpipe:dev}
buildah=(buildah --storage-driver vfs)
base=${BASE_IMAGE:-localhost/zkpipe-base:bookworm}
rootfs=${ROOTFS:-/var/tmp/zkpipe-base/rootfs}

if [ -z "${BASE_IMAGE:-}" ] && ! "${buildah[@]}" inspect --type image "$base" > /dev/null 2>&1; then
    if [ ! -x "$rootfs/usr/bin/apt-get" ]; then
        echo "container_build: debootstrap bookworm into $rootfs" >&2
        debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian
    fi
    echo "container_build: base image $base from $rootfs" >&2
    ctr=$("${buildah[@]}" from scratch)
    mnt=$("${buildah[@]}" mount "$ctr")
    tar -C "$rootfs" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf - . | tar -C "$mnt" -xf -
    "${buildah[@]}" umount "$ctr" > /dev/null
    "${buildah[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --cmd /bin/bash "$ctr"
    "${buildah[@]}" commit --quiet "$ctr" "$base" > /dev/null
    "${buildah[@]}" rm "$ctr" > /dev/null
fi

# pip inside the build trusts what this host trusts (a TLS-intercepting proxy's CA, if any): the host's
# bundle is mounted for the RUN steps only and named through the Dockerfile's PIP_CERT argument.
host_ca=${HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
ca_args=()
if [ -f "$host_ca" ]; then
    ca_args=(-v "$host_ca:/etc/ssl/certs/zkpipe-build-ca.crt:ro" --build-arg PIP_CERT=/etc/ssl/certs/zkpipe-build-ca.crt)
fi
echo "container_build: building $tag from $base" >&2
"${buildah[@]}" bud --format docker --isolation chroot --layers=false --build-arg "BASE_IMAGE=$base" "${ca_args[@]}" \
    -t "$tag" -f Dockerfile .
