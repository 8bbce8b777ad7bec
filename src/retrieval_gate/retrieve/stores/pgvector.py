"""``pgvector:TABLE`` — a team's PostgreSQL table with a pgvector column, read only
(``retrieve.stores``). Options: ``dsn`` (a libpq string or URI; ``${NAME}`` reads it from the
environment, and it is never shown), ``id_column`` (a column holding the card id) or ``id_key`` (a
key — dotted for nested — in the JSONB ``metadata_column``, default ``cmetadata`` (LangChain's
PGVector) or ``metadata``), ``embedding_column`` (default ``embedding``), ``text_column`` (the
document text the model probe re-embeds; default the first of ``document``, ``text``,
``content``, ``page_content``). Neither ``id_column`` nor ``id_key``: the ``id`` column, mapped
chunk → card through the KB.

Rows are ranked by cosine distance (``<=>``), score ``1 − distance``. Every statement runs under
``statement_timeout`` and the connection under ``connect_timeout`` (``store_timeout_s``); only
psycopg (binary) is needed — vectors travel as pgvector's text form."""

from __future__ import annotations

from typing import Any

import numpy as np

from retrieval_gate.errors import RetrieverError, one_line
from retrieval_gate.load import boundary
from retrieval_gate.retrieve.settings import ID_COLUMN_OPTION, ID_KEY_OPTION, StoreAdapterSettings
from retrieval_gate.retrieve.stores import Row, card_of, lookup

_TEXT_COLUMNS = ("document", "text", "content", "page_content")
_METADATA_COLUMNS = ("cmetadata", "metadata")


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def _parse_vector(text: Any) -> np.ndarray:
    if isinstance(text, str):
        return np.asarray([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)
    return np.asarray(text, dtype=np.float32)


class PgvectorClient:
    def __init__(self, table: str, *, settings: StoreAdapterSettings, dsn: str | None):
        self.table = table
        self.settings = settings
        self.label = f"pgvector:{table}"
        if not dsn:
            raise RetrieverError(f"{self.label} needs options.dsn (a PostgreSQL connection string, or ${{NAME}} "
                                 "to read it from the environment)")
        if "${" in dsn:
            raise RetrieverError(f"{self.label}: options.dsn names an environment variable that was not read "
                                 "(this command reads no environment)")
        try:
            import psycopg
            from psycopg import sql
        except ImportError:
            raise RetrieverError(f"{self.label} needs psycopg (pip install 'retrieval-gate[pgvector]')") from None
        self._sql = sql
        self._secrets = [dsn]
        try:
            password = psycopg.conninfo.conninfo_to_dict(dsn).get("password")
        except Exception:
            password = None
        if isinstance(password, str) and password:
            self._secrets.append(password)
        schema, _, name = table.rpartition(".")
        self._schema, self._name = schema or None, name
        timeout_ms = int(settings.store_timeout_s * 1000)
        try:
            self._conn = psycopg.connect(dsn, connect_timeout=max(1, int(settings.store_timeout_s)),
                                         options=f"-c statement_timeout={timeout_ms}", autocommit=True)
        except Exception as exc:
            raise RetrieverError(f"{self.label}: cannot connect to PostgreSQL: {self._clean(exc)}") from None
        try:
            self._columns = self._table_columns()
            self._plan()
        except BaseException:
            self._conn.close()
            raise

    def _clean(self, exc: BaseException) -> str:
        """A driver's message on one line, clipped, without the DSN or its password (libpq's messages name
        host and user, not the password: this holds whatever a driver says)."""
        text = one_line(exc)
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return boundary.clip(text)

    def _table_columns(self) -> dict[str, str]:
        rows = self._conn.execute(
            "SELECT column_name, udt_name FROM information_schema.columns WHERE table_name = %s "
            "AND table_schema = COALESCE(%s, current_schema()) ORDER BY ordinal_position",
            (self._name, self._schema)).fetchall()
        if not rows:
            tables = [r[0] for r in self._conn.execute(
                "SELECT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                "JOIN pg_type t ON t.oid = a.atttypid WHERE t.typname = 'vector' AND c.relkind = 'r' "
                "ORDER BY c.relname LIMIT 20").fetchall()]
            raise RetrieverError(f"{self.label}: no table {self.table!r} in this database (tables with a vector "
                                 f"column: {', '.join(tables) or 'none'})")
        return {name: udt for name, udt in rows}

    def _column(self, name: str, option: str) -> str:
        if name not in self._columns:
            raise RetrieverError(f"{self.label}: options.{option}: no column {name!r} "
                                 f"(columns: {', '.join(self._columns)})")
        return name

    def _plan(self) -> None:
        settings, sql = self.settings, self._sql
        self._embedding = self._column(settings.embedding_column, "embedding_column")
        if self._columns[self._embedding] != "vector":
            raise RetrieverError(f"{self.label}: options.embedding_column: column {self._embedding!r} is of type "
                                 f"{self._columns[self._embedding]}, not a pgvector vector")
        if settings.metadata_column is not None:
            self._meta: str | None = self._column(settings.metadata_column, "metadata_column")
        else:
            self._meta = next((c for c in _METADATA_COLUMNS if self._columns.get(c) in ("jsonb", "json")), None)
        if settings.text_column is not None:
            self._text: str | None = self._column(settings.text_column, "text_column")
        else:
            self._text = next((c for c in _TEXT_COLUMNS if c in self._columns), None)
        if settings.id_column is not None and settings.id_key is not None:
            raise RetrieverError(f"{self.label}: give options.id_column or options.id_key, not both")
        self._id_column: str | None = None
        self.id_key = settings.id_key
        if settings.id_key is not None:
            if self._meta is None:
                raise RetrieverError(f"{self.label}: options.id_key needs a JSONB metadata column "
                                     f"({' or '.join(_METADATA_COLUMNS)}, or options.metadata_column)")
            self.id_label = f"key {settings.id_key!r} in column {self._meta}"
        else:
            self._id_column = self._column(settings.id_column or "id", "id_column")
            self.id_label = f"value in column {self._id_column!r}"
        row_id = next((c for c in ("id", "uuid") if c in self._columns), None)  # else the row's place (ctid)
        self._row_id = sql.Identifier(row_id) if row_id else sql.SQL("ctid")
        self.id_option = ID_KEY_OPTION if settings.id_key is not None else ID_COLUMN_OPTION
        self._table_sql = (sql.Identifier(self._schema, self._name) if self._schema else sql.Identifier(self._name))

    def count(self) -> int:
        return int(self._conn.execute(self._sql.SQL("SELECT count(*) FROM {}").format(self._table_sql)).fetchone()[0])

    def dimension(self) -> int | None:
        row = self._conn.execute(self._sql.SQL("SELECT vector_dims({}) FROM {} WHERE {} IS NOT NULL LIMIT 1").format(
            self._sql.Identifier(self._embedding), self._table_sql, self._sql.Identifier(self._embedding))).fetchone()
        return int(row[0]) if row else None

    def query(self, vector: np.ndarray, n: int) -> list[Row]:
        sql = self._sql
        meta = sql.Identifier(self._meta) if self._meta else sql.SQL("NULL")
        card = sql.Identifier(self._id_column) if self._id_column else sql.SQL("NULL")
        statement = sql.SQL("SELECT {row_id}::text, {card}::text, {meta}, 1 - ({emb} <=> %s::vector) FROM {table} "
                            "ORDER BY {emb} <=> %s::vector LIMIT %s").format(
            row_id=self._row_id, card=card, meta=meta, emb=sql.Identifier(self._embedding),
            table=self._table_sql)
        text = _vector_text(vector)
        rows = []
        for row_id, column_card, metadata, score in self._conn.execute(statement, (text, text, n)).fetchall():
            card = card_of(lookup(metadata, self.id_key)) if self.id_key else card_of(column_card)
            rows.append(Row(row_id=str(row_id), card=card, score=round(float(score), 6),
                            metadata=metadata if isinstance(metadata, dict) else None))
        return rows

    def sample(self, n: int) -> list[tuple[str, np.ndarray]]:
        if self._text is None:
            return []
        sql = self._sql
        statement = sql.SQL("SELECT {text}, {emb}::text FROM {table} WHERE {text} IS NOT NULL ORDER BY {row_id} "
                            "LIMIT %s").format(text=sql.Identifier(self._text), emb=sql.Identifier(self._embedding),
                                               table=self._table_sql, row_id=self._row_id)
        return [(str(text), _parse_vector(vec)) for text, vec in self._conn.execute(statement, (n,)).fetchall()
                if str(text).strip()]

    def fingerprint(self) -> dict[str, Any]:
        out: dict[str, Any] = {"table": self.table, "embedding_column": self._embedding}
        if self._id_column is not None:
            out["id_column"] = self._id_column
        return out

    def close(self) -> None:
        self._conn.close()
