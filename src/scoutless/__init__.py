"""scoutless."""
