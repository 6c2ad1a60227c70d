"""``rocmkit install``: carry out a Plan in a Python environment, safely.

Record the environment's state, back up what may be replaced, install with uv
or pip, guard the result against later swaps of torch, verify it in a child
process, and restore the recorded state if anything fails.
"""
