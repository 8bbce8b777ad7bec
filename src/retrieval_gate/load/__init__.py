"""Load: files → plain models. Every loader reports all problems it finds as ``file:line``."""
