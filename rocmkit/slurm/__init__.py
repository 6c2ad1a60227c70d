"""Slurm integration: a node health check (``HealthCheckProgram``), a per-job
prolog/epilog check, the slurm.conf lines that install them, and the per-node
task of ``scripts/slurm/onboard.sbatch``."""
