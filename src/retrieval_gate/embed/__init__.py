"""Embed: the sentence-transformers adapter (model resolution, offline load) and the
content-addressed embedding cache. Heavy imports (torch, sentence-transformers) happen only
when a text actually has to be embedded."""
