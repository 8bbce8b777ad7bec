"""The tool's own files, read back: results, comparison and audit files (``results.py``), the
baseline and its KB manifest (``baseline.py``). Each reader turns a file's bytes into the model
it was written from (``score.results``, ``compare.model``, ``audit.model``), through the same input
boundary as a user's files (``load.boundary``). ``load/`` reads the user's inputs only."""
