"""Drop-in replacements for other circuit-breaker libraries' APIs, on top
of tripwire's breaker. ``tripwire.compat.pybreaker`` mirrors pybreaker."""
