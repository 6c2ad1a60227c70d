"""rocmkit: detect, resolve, install and validate PyTorch and Triton on AMD (and NVIDIA) GPUs."""

__version__ = "0.1.0"
