"""The kernel libraries users add after torch (xformers, flash-attn, bitsandbytes): their data, how
they resolve for a plan, and the lockfile and project exports of a plan."""
