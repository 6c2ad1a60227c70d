"""The ground floor's helpers: atomic and bounded IO, size- and depth-limited loading, redaction,
environment variables, where the data and caches live."""
