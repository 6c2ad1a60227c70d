"""``rocmkit build``: PyTorch, Triton and torchvision from source when no wheel fits.

refs.py      the source references in matrices/build.toml (loaded and validated)
targets.py   what to build for: backend, archs, MAX_JOBS, ccache
recipes.py   a build plan (Recipe) for a machine or given archs
steps.py     the generic, resumable step runner (one log per step, a JSON state file)
preflight.py disk, memory, compilers, ROCm/CUDA toolchain, git, Python headers
script.py    a Recipe as a shell script a person can review and run
pin.py       `python -m rocmkit.source_build.pin`: check out the Triton commit a torch checkout pins
"""
