"""Embed: the sentence-transformers adapter (model resolution, offline load) and the
content-addressed embedding cache. Heavy imports (torch, sentence-transformers) happen only
when a text actually has to be embedded."""

CACHE_FILE = "embeddings.sqlite3"  # the cache's name in a store folder and in a shard folder (no imports here:
# the store's folder check reads it without loading numpy)
