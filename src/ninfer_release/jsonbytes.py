"""Exact JSON bytes (foundation leaf).

Two renderings, never mixed:

* :func:`dumps_stable` — what every JSON asset is written as: UTF-8, two-space indent,
  keys sorted, LF line endings, exactly one trailing newline.
* :func:`canonical_json` — RFC 8785 (JCS) canonical form, what a *semantic* digest hashes.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any


def dumps_stable(obj: Any) -> bytes:
    """Render ``obj`` as stable, human-readable JSON bytes (sorted keys, LF, trailing newline)."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def _jcs_number(value: float | int) -> str:
    # RFC 8785 §3.2.2.3: numbers serialise as ECMAScript Number.prototype.toString.
    if isinstance(value, bool):  # pragma: no cover - bools handled by caller
        raise TypeError("bool is not a number")
    if isinstance(value, int):
        if abs(value) > 2**53:
            raise ValueError(f"integer {value} is outside the I-JSON safe range (RFC 8785 §3.2.2.3)")
        return str(value)
    if not math.isfinite(value):
        raise ValueError("NaN and Infinity have no JSON form (RFC 8785 §3.2.2.3)")
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    r = repr(value)  # shortest round-trip form, as ECMAScript requires
    if "e" in r:
        mantissa, exp = r.split("e")
        exp_i = int(exp)
        if -7 < exp_i < 21:
            return format(value, "f").rstrip("0").rstrip(".")
        return f"{mantissa}e{'+' if exp_i > 0 else '-'}{abs(exp_i)}"
    return r


def _jcs(obj: Any) -> str:
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int | float):
        return _jcs_number(obj)
    if isinstance(obj, str):
        return json.dumps(obj, ensure_ascii=False)
    if isinstance(obj, list | tuple):
        return "[" + ",".join(_jcs(v) for v in obj) + "]"
    if isinstance(obj, dict):
        for key in obj:
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {key!r}")
        # RFC 8785 §3.2.3: sort by UTF-16 code units.
        items = sorted(obj.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _jcs(v) for k, v in items) + "}"
    raise TypeError(f"{type(obj).__name__} has no JSON form")


def canonical_json(obj: Any) -> bytes:
    """RFC 8785 (JCS) canonical UTF-8 bytes of a JSON-compatible value.

    Raises:
        TypeError: a value has no JSON form (datetime, bytes, non-string key).
        ValueError: NaN/Infinity, or an integer outside ±2**53.
    """
    return _jcs(obj).encode("utf-8")


def semantic_sha256(obj: Any) -> str:
    """SHA-256 (lowercase hex) of :func:`canonical_json` of ``obj``."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()
