"""Render: results / comparisons → terminal tables, Markdown (PR comment, job summary), HTML."""
