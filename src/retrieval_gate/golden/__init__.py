"""The golden-set loop, in one package (docs/golden-set.md): a query log read and masked, drafted
into cases with pooled candidates, labelled on a page, the labels applied in sittings, two
labellers' agreement, and the top-up of what a new system surfaces that nobody judged.

Pure steps (checked per module by ``tests/unit/test_architecture.py``, ``GOLDEN_PURE``):
``log_clean``, ``masking``, ``draw``, ``draft_entry``, ``decisions``, ``sittings``, ``agreement``,
``topup``. Adapters and orchestration: ``log_reader`` (the log, streamed), ``masking_names`` (the
optional Presidio detector), ``cases_draft`` (`cases draft`), ``draft_folder`` (draft.jsonl, label.html, draft.md),
``label_page`` (label.html), ``labels_file`` (labels.jsonl read), ``label_apply`` (`label apply`,
`label agree`'s checks), ``topup_run`` (`label top-up`)."""
