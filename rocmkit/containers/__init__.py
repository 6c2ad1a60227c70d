"""Container images: base images per ROCm/CUDA release (``matrices/images.toml``) and
the Dockerfiles rendered from them.

``images``      the data: base images and image rows, validated on load, and the image
                spec chosen for ``rocmkit docker render`` options
``dockerfile``  the rendering: one Dockerfile per spec, and which files in docker/ are stale
``request``     what ``rocmkit docker render`` was asked to do, checked when it is made

A rendered Dockerfile installs rocmkit from the build context, runs ``rocmkit
install`` for the image's ROCm release, torch release and gfx archs,
and runs ``rocmkit doctor --level 0`` as a build step. There is no GPU at build
time, so the detection overrides ``ROCMKIT_GFX`` and ``ROCMKIT_ROCM_VERSION``
say what to install for; they are build ``ARG``s, not ``ENV``, so a running
container detects its real GPUs. The entrypoint runs ``rocmkit doctor``.

The files in ``docker/`` are this package's output, byte for byte
(``rocmkit docker render --out docker --check`` proves it). CUDA base images
are listed and validated but not rendered: without a GPU at build time,
``rocmkit install`` cannot yet be told a CUDA release.
"""
