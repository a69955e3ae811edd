"""The docs site's generated pages: the reference (CLI, HTTP API, settings) read from the code
and the results pages read from ``results/*.json``, written at build time by ``hooks.py``
so that none of them can go stale."""
