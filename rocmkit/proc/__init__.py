"""Processes: the one runner for external commands, the prefork server and worker, the child
result file, the interpreter probe."""
