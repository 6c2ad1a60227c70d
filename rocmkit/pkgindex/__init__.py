"""The package-index client: HTTP reads (:mod:`.http`), simple-index pages and metadata
(:mod:`.pages`), and ranged reads of a wheel's zip directory (:mod:`.wheelzip`). Every read is
bounded (a deadline, a size cap, a check that the answer is an index page at all); each failure is a
:class:`~rocmkit.errors.NetworkError` (exit 9) naming the URL."""
