"""Reading source records (JSONL, CSV) and mapping them onto a search spec's fields."""

from scopegate.ingest.mapping import FieldMapping
from scopegate.ingest.readers import SourceRecordError, read_csv, read_jsonl, read_records

__all__ = ["FieldMapping", "SourceRecordError", "read_csv", "read_jsonl", "read_records"]
