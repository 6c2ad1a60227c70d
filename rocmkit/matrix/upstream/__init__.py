"""Readers for upstream's machine-readable sources (pure functions of their text).

Each reader takes the text of one upstream file and returns typed facts; none
executes upstream code (Python files are read with :mod:`ast`, shell with a
regex), so a recorded file replays exactly in tests and a hostile file cannot
run. Where the text comes from (a git history, a recording, HTTP) is
:mod:`rocmkit.matrix.upstream.history`'s business.
"""
