"""Field and label selectors, as LIST / WATCH / DELETECOLLECTION take them.

  sel = Selector.parse(field_selector, label_selector, fields)  # ValueError
  sel.matches(obj)

field_selector: terms "f=v", "f==v" or "f!=v" joined by commas, where f is
one of fields (a dict of field name -> function(obj) -> string; a missing
field reads as ""). label_selector: terms "k=v", "k==v" or "k!=v" joined by
commas; the set-based terms (k, !k, k in (...), k notin (...)) are not
served. ValueError names the term that is not understood. Immutable once
parsed, safe from any thread.
"""


def _split_terms(text):
  """The non-empty terms between commas."""
  return [t.strip() for t in text.split(",") if t.strip()]


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
    self._labels = label_terms    # [(key, op, value)]

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
    parsed = _split_op(term)
    if parsed is None or any(c in parsed[0] + parsed[2] for c in " ()!="):
      raise ValueError("invalid label selector term %r: expected "
                       "key=value, key==value or key!=value" % term)
    key, op, value = parsed
    return key, "!=" if op == "!=" else "=", value

  def matches(self, obj):
    """Whether obj (a dict) satisfies every field and label term."""
    for getter, op, value in self._fields:
      if (getter(obj) == value) != (op == "="):
        return False
    if not self._labels:
      return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for key, op, value in self._labels:
      # "!=" also matches objects without the label.
      if (labels.get(key) == value) != (op == "="):
        return False
    return True
