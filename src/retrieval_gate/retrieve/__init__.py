"""Retrieve: retrievers behind one small contract: question and limit in, ranked ids out."""
