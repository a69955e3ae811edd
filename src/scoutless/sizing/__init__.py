"""Online per-instance sizing with retries: an engine that walks instances of task types
in order, allocates each from what was known before it, retries a failed attempt from the
conditional distribution and learns each outcome; the peers' protocol, accounting and
baselines beside it (docs/how-to/sizing.md)."""
