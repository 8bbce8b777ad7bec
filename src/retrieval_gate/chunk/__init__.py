"""Cards → chunks: the unit that is embedded, stored and retrieved (ADR-0023: card identity is kept)."""
