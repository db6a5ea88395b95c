"""Field and label selectors, as LIST / WATCH / DELETECOLLECTION take them.

  sel = Selector.parse(field_selector, label_selector, fields)  # ValueError
  sel.matches(obj)

field_selector: terms "f=v", "f==v" or "f!=v" joined by commas, where f is
one of fields (a dict of field name -> function(obj) -> string; a missing
field reads as ""). label_selector: "k=v", "k==v", "k!=v", "k", "!k",
"k in (a,b)", "k notin (a,b)" joined by commas. ValueError names the term
that is not understood. Immutable once parsed, safe from any thread.
"""

import re

_LABEL_SET_TERM = re.compile(r"\s*(\S+)\s+(in|notin)\s+\(([^)]*)\)\s*\Z")


def _split_terms(text):
  """Splits at commas outside parentheses."""
  terms, depth, start = [], 0, 0
  for i, ch in enumerate(text):
    if ch == "(":
      depth += 1
    elif ch == ")":
      depth -= 1
    elif ch == "," and depth == 0:
      terms.append(text[start:i])
      start = i + 1
  terms.append(text[start:])
  return [t.strip() for t in terms if t.strip()]


def _split_op(term):
  """(key, op, value) of a 'k=v', 'k==v' or 'k!=v' term, or None."""
  for op in ("!=", "==", "="):
    idx = term.find(op)
    if idx > 0:
      return term[:idx].strip(), op, term[idx + len(op):].strip()
  return None


def _field_getter(path):
  """A function(obj) -> str for a dotted path like spec.pool.name."""
  parts = path.split(".")

  def get(obj):
    """The field of obj as a string ("" when missing)."""
    value = obj
    for part in parts:
      if not isinstance(value, dict):
        return ""
      value = value.get(part)
    if value is None:
      return ""
    if isinstance(value, bool):
      return "true" if value else "false"
    return str(value)
  return get


def field_getters(*paths):
  """{path: getter} for the given dotted paths."""
  return {p: _field_getter(p) for p in paths}


class Selector:
  """A parsed field and label selector (either may be empty)."""

  def __init__(self, field_terms, label_terms):
    self._fields = field_terms    # [(getter, op, value)]
    self._labels = label_terms    # [(key, op, values)]

  @classmethod
  def parse(cls, field_selector, label_selector, fields):
    """A Selector of the two query values (either may be None or "")."""
    field_terms = []
    for term in _split_terms(field_selector or ""):
      parsed = _split_op(term)
      if parsed is None:
        raise ValueError("invalid field selector term %r: expected "
                         "field=value, field==value or field!=value" % term)
      key, op, value = parsed
      if key not in fields:
        raise ValueError('field label not supported: %s' % key)
      field_terms.append((fields[key], "!=" if op == "!=" else "=", value))
    label_terms = []
    for term in _split_terms(label_selector or ""):
      label_terms.append(cls._parse_label_term(term))
    return cls(field_terms, label_terms)

  @staticmethod
  def _parse_label_term(term):
    m = _LABEL_SET_TERM.match(term)
    if m:
      values = {v.strip() for v in m.group(3).split(",") if v.strip()}
      return m.group(1), m.group(2), values
    parsed = _split_op(term)
    if parsed is not None:
      key, op, value = parsed
      if not key or any(c in key + value for c in " ()!="):
        raise ValueError("invalid label selector term %r" % term)
      return key, "!=" if op == "!=" else "=", {value}
    if term.startswith("!"):
      key = term[1:].strip()
      op = "!exists"
    else:
      key, op = term, "exists"
    if not key or any(c in key for c in " ()!=,"):
      raise ValueError("invalid label selector term %r" % term)
    return key, op, set()

  def matches(self, obj):
    """Whether obj (a dict) satisfies every field and label term."""
    for getter, op, value in self._fields:
      if (getter(obj) == value) != (op == "="):
        return False
    if not self._labels:
      return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for key, op, values in self._labels:
      present = key in labels
      if op == "exists":
        ok = present
      elif op == "!exists":
        ok = not present
      elif op in ("=", "in"):
        ok = present and labels[key] in values
      else:  # "!=" and "notin" also match objects without the label.
        ok = not present or labels[key] not in values
      if not ok:
        return False
    return True
