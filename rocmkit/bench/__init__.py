"""Benchmarks: torch.compile against eager on a built-in model set (``rocmkit bench models``).

``models`` holds the model set (built from configs, random weights, no
downloads), ``harness`` times and checks one model the way PyTorch's dynamo
benchmark harness does, ``child`` runs one model per process, ``suite`` runs
the set and collects ``results``, ``html`` draws the picture. Nothing here
imports torch at module level: only the child process does.
"""
