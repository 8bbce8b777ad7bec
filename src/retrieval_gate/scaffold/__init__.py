"""``retrieval-gate init``'s pure part: detect the KB and the golden set from a file listing
(``detect``), the texts of the files it writes (``texts``) and what to do with each (``plan``)."""
