"""Field errors and value formats of the Kubernetes API, for the emulator.

FieldError is one problem at a field path, rendered the way kube-apiserver's
field.Error renders it ("spec.pool.name: Required value", "spec.devices[3]
.name: Invalid value: \"GPU\": a lowercase RFC 1123 label must ..."). The
is_* / check_* helpers implement the name and value formats of
k8s.io/apimachinery validation (DNS labels and subdomains, qualified names,
label values, C identifiers, quantities, RFC 3339 times, semver 2.0); each
check_* appends FieldErrors to a list and returns nothing. Pure functions,
safe from any thread.
"""

import datetime
import json
import re

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_QUANTITY = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)"
                       r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?"
                       r"\Z")
_RFC3339 = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})"
                      r":([0-9]{2})(\.[0-9]+)?(Z|[+-]([0-9]{2}):([0-9]{2}))\Z")
_NUM = r"(0|[1-9][0-9]*)"
_PRE = r"(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD = r"[0-9A-Za-z-]+"
_SEMVER = re.compile(_NUM + r"\." + _NUM + r"\." + _NUM +
                     r"(-" + _PRE + r"(\." + _PRE + r")*)?" +
                     r"(\+" + _BUILD + r"(\." + _BUILD + r")*)?\Z")

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63

_DNS_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case "
                  "alphanumeric characters or '-', and must start and end "
                  "with an alphanumeric character")
_DNS_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower "
                      "case alphanumeric characters, '-' or '.', and must "
                      "start and end with an alphanumeric character")
_QUALIFIED_MSG = ("name part must consist of alphanumeric characters, '-', "
                  "'_' or '.', and must start and end with an alphanumeric "
                  "character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of "
                    "alphanumeric characters, '-', '_' or '.', and must start "
                    "and end with an alphanumeric character")
_C_IDENTIFIER_MSG = ("a valid C identifier must start with alphabetic "
                     "character or '_', followed by a string of alphanumeric "
                     "characters or '_'")


def render_value(value, limit=120):
  """value as kube-apiserver quotes it in an error (JSON), cut to limit."""
  try:
    text = json.dumps(value, sort_keys=True)
  except (TypeError, ValueError):
    text = repr(value)
  if len(text) > limit:
    text = text[:limit] + "...(truncated)"
  return text


class FieldError:
  """One problem at a field path. kind is one of the KINDS keys."""

  KINDS = {
      "Required": ("FieldValueRequired", "Required value"),
      "Invalid": ("FieldValueInvalid", "Invalid value"),
      "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
      "TooLong": ("FieldValueTooLong", "Too long"),
      "TooMany": ("FieldValueTooMany", "Too many"),
      "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
      "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
      "Forbidden": ("FieldValueForbidden", "Forbidden"),
      "Unknown": ("FieldValueUnknown", "Unknown field"),
  }
  _WITH_VALUE = ("Invalid", "TypeInvalid", "Duplicate", "NotSupported")

  __slots__ = ("path", "kind", "value", "detail")

  def __init__(self, path, kind, value=None, detail=""):
    self.path = path
    self.kind = kind
    self.value = value
    self.detail = detail

  def body(self):
    """The message without the path, e.g. 'Invalid value: "x": why'."""
    text = self.KINDS[self.kind][1]
    if self.kind in self._WITH_VALUE:
      text += ": " + render_value(self.value)
    if self.detail:
      text += ": " + self.detail
    return text

  def cause(self):
    """The metav1.StatusCause of this error."""
    return {"reason": self.KINDS[self.kind][0], "message": self.body(),
            "field": self.path}

  def __str__(self):
    return "%s: %s" % (self.path, self.body()) if self.path else self.body()

  def __repr__(self):
    return "FieldError(%s)" % self


# Appenders of one FieldError of each kind to errs.


def required(errs, path, detail=""):
  errs.append(FieldError(path, "Required", detail=detail))


def invalid(errs, path, value, detail):
  errs.append(FieldError(path, "Invalid", value, detail))


def forbidden(errs, path, detail):
  errs.append(FieldError(path, "Forbidden", detail=detail))


def too_long(errs, path, limit):
  errs.append(FieldError(path, "TooLong",
                         detail="may not be more than %d bytes" % limit))


def too_many(errs, path, count, limit):
  errs.append(FieldError(path, "TooMany", detail="%d: must have at most %d "
                         "items" % (count, limit)))


def duplicate(errs, path, value):
  errs.append(FieldError(path, "Duplicate", value))


def not_supported(errs, path, value, supported):
  errs.append(FieldError(path, "NotSupported", value, "supported values: " +
                         ", ".join('"%s"' % s for s in supported)))


def check_dns_label(errs, path, value):
  """DNS-1123 label (<= 63, [a-z0-9-], alphanumeric at both ends)."""
  if len(value) > DNS1123_LABEL_MAX:
    invalid(errs, path, value, "must be no more than 63 characters")
  if not _DNS_LABEL.match(value):
    invalid(errs, path, value, _DNS_LABEL_MSG)


def check_dns_subdomain(errs, path, value):
  """DNS-1123 subdomain (<= 253, labels separated by '.')."""
  if len(value) > DNS1123_SUBDOMAIN_MAX:
    invalid(errs, path, value, "must be no more than 253 characters")
  if not _DNS_SUBDOMAIN.match(value):
    invalid(errs, path, value, _DNS_SUBDOMAIN_MSG)


def check_qualified_name(errs, path, value):
  """A label key: [<DNS subdomain>/]<name <= 63 of [-A-Za-z0-9_.]>."""
  parts = value.split("/")
  name = parts[-1]
  if len(parts) == 2:
    prefix = parts[0]
    if not prefix:
      invalid(errs, path, value, "prefix part must be non-empty")
    else:
      check_dns_subdomain(errs, path, prefix)
  elif len(parts) != 1:
    invalid(errs, path, value, "a qualified name must consist of a name part "
            "and an optional DNS subdomain prefix (e.g. 'example.com/MyName')")
    return
  if not name:
    invalid(errs, path, value, "name part must be non-empty")
  elif len(name) > QUALIFIED_NAME_MAX:
    invalid(errs, path, value, "name part must be no more than 63 characters")
  if name and not _QUALIFIED_NAME_PART.match(name):
    invalid(errs, path, value, _QUALIFIED_MSG)


def check_label_value(errs, path, value):
  """A label value: empty or <= 63 of [-A-Za-z0-9_.], alnum at the ends."""
  if len(value) > LABEL_VALUE_MAX:
    invalid(errs, path, value, "must be no more than 63 characters")
  if not _LABEL_VALUE.match(value):
    invalid(errs, path, value, _LABEL_VALUE_MSG)


def check_c_identifier(errs, path, value, max_len):
  """A C identifier of at most max_len characters."""
  if len(value) > max_len:
    too_long(errs, path, max_len)
  if not _C_IDENTIFIER.match(value):
    invalid(errs, path, value, _C_IDENTIFIER_MSG)


def is_quantity(value):
  """Whether value parses as a resource.Quantity (string or JSON number)."""
  if isinstance(value, bool):
    return False
  if isinstance(value, (int, float)):
    return True
  return isinstance(value, str) and _QUANTITY.match(value) is not None


def is_rfc3339(value):
  """Whether value is an RFC 3339 date-time as Go's time.RFC3339 parses."""
  if not isinstance(value, str):
    return False
  m = _RFC3339.match(value)
  if not m:
    return False
  try:
    datetime.datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)),
                      int(m.group(4)), int(m.group(5)), int(m.group(6)))
  except ValueError:
    return False
  if m.group(9) is not None and (int(m.group(9)) > 23 or
                                 int(m.group(10)) > 59):
    return False
  return True


def is_semver(value):
  """Whether value is a strict semver 2.0.0 version (no leading zeros)."""
  return isinstance(value, str) and _SEMVER.match(value) is not None


def is_extended_resource_name(value):
  """v1helper.IsExtendedResourceName: domain-prefixed, not kubernetes.io."""
  if "/" not in value or "kubernetes.io/" in value:
    return False
  if value.startswith("requests."):
    return False
  errs = []
  check_qualified_name(errs, "", "requests." + value)
  return not errs
