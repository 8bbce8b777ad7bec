"""Cards → chunks: the unit that is embedded, stored and retrieved (card identity is kept: docs/decisions.md)."""
