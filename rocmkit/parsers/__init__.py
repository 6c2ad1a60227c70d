"""Pure parsers: one module per tool, each a function of text alone.

A parser never raises on bad text: it returns what it could read plus
:class:`~rocmkit.machine.Problem` records. GPU sightings from every tool share
one record type, :class:`GpuRecord`, which ``rocmkit.detect`` merges.
"""

from __future__ import annotations

from rocmkit.parsers.records import GpuRecord, norm_hex, strip_ansi

__all__ = ["GpuRecord", "norm_hex", "strip_ansi"]
