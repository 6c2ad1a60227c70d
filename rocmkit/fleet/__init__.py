"""Fleet summaries: many nodes' ``rocmkit.report/1`` files read back, compared and rendered.

``load`` reads report files (never re-probes a node), ``summarize`` builds the
``rocmkit.fleet/1`` summary (node table, failures by cause, version drift,
performance outliers) and ``render_html`` writes it as one self-contained page.
"""
