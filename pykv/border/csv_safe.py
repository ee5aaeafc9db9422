"""Every CSV pykv writes goes through ``csv_text``: a text cell that a spreadsheet would run as a formula (it begins
with =, +, -, @, a tab or a carriage return: a request id from a workload file, "=HYPERLINK(...)") is written with
a leading apostrophe, so Excel, LibreOffice and Google Sheets show it as text (OWASP's "CSV injection" advice).
Numbers are left as numbers: a negative number in a numeric column is data, not a formula. Lines end in CRLF (RFC
4180), so a cell holding a carriage return is quoted: unquoted, a spreadsheet would start a new row at it, and a
"=..." after it would be a formula again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutral_cell(value: Any) -> Any:
    """A text cell that could start a formula, with an apostrophe in front; any other value as it was."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(frame: pd.DataFrame, index: bool = False) -> str:
    """``frame.to_csv(index=index)``, with every text cell and column name that could start a formula
    neutralised."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    def column(values: pd.Series) -> pd.Series:
        return values if is_numeric_dtype(values) or is_bool_dtype(values) else values.map(neutral_cell)

    safe = frame.copy() if frame.empty else frame.apply(column)  # by position: duplicate names are fine
    safe.columns = [neutral_cell(name) for name in frame.columns]
    if index and not is_numeric_dtype(safe.index):
        safe.index = safe.index.map(neutral_cell)
    return safe.to_csv(index=index, lineterminator="\r\n")  # RFC 4180: a cell holding \r is quoted too
