"""The replay tests' helpers live in replay_helpers.py (importable by name)."""
