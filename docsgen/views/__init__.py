"""Each benchmark's results view, one module per area: a view takes the benchmark's JSON
and lays its figures out as tables (``docsgen/results_views.py`` lists which view serves
which benchmark)."""
