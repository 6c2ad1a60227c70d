"""The detection cache and the output cache (detect and resolve reruns)."""
