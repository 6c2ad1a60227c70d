"""Container images: base images per ROCm release and for CPU and CUDA images
(``matrices/images.toml``), and the Dockerfiles rendered from them.

``images``      the data: base images and image rows, validated on load, and the image
                spec chosen for ``rocmkit docker render`` options
``dockerfile``  the rendering: one Dockerfile per spec, and which files in docker/ are stale
``request``     what ``rocmkit docker render`` was asked to do, checked when it is made

A rendered Dockerfile installs rocmkit from the build context, runs ``rocmkit
install`` for the image's torch build, and runs ``rocmkit doctor --level 0
--image-build`` as a build step. There is no GPU at build time, so the image says
what to install for: a ROCm image through the detection overrides ``ROCMKIT_GFX``
and ``ROCMKIT_ROCM_VERSION`` (build ``ARG``s, not ``ENV``, so a running container
detects its real GPUs) and ``--backend rocmX.Y``; a CPU image with ``--backend cpu``; a
CUDA image by naming its wheels (``--backend cu128``). The entrypoint runs ``rocmkit doctor``.

The files in ``docker/`` are this package's output, byte for byte
(``rocmkit docker render --out docker --check`` proves it).
"""
