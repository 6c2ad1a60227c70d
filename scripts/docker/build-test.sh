#!/usr/bin/env bash
# Real `docker build`s, end to end, on this machine, with nothing from a registry
# (tests/integration/test_docker_build_real.py): docker/rocm6.2-torch2.5.Dockerfile,
# docker/cuda12.8-torch2.11.Dockerfile, and the CPU image bare `rocmkit docker render`
# gives here (with the real torch 2.13.0 CPU wheel); its own dockerd (stopped by PID), a
# debootstrap Debian base loaded with `docker import`, the classic builder, and 127.0.0.1
# indexes for pip and for rocmkit's torch install; then `rocmkit doctor` in each image.
#
#   sudo scripts/docker/build-test.sh            # after scripts/test.sh made .venv
#
# Needs root, and docker.io and debootstrap (`apt-get install -y docker.io
# debootstrap`; .ci/run installs them). The base tarball and wheels are made first and
# cached in /var/cache/rocmkit-tests (or $DOCKER_TEST_CACHE): the first run takes a few
# minutes more; later ones took 2 to 4.5 minutes on 2 busy cores (the CPU image's real
# torch install is most of it). The whole suite (and so CI) runs the same test.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python -m tests.support.dockerd prepare
exec .venv/bin/python -m pytest tests/integration/test_docker_build_real.py -p no:cacheprovider "$@"
