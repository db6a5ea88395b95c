"""Kubernetes objects checked against an OpenAPI v3 document with jsonschema.

  schema = Schema.load(path)          # raises OSError / ValueError
  errs = schema.check("io.k8s.api.resource.v1.ResourceSlice", obj)

Schema(document) translates components.schemas of the document into JSON
Schema (Debian's python3-jsonschema validates it), as a strict decoder reads
it: an object with declared properties refuses unknown ones (strict field
validation), integers are int64 unless the format says int32, Quantity is a
number or a string that parses as a resource.Quantity,
x-kubernetes-int-or-string is an integer or a string, a list of
x-kubernetes-list-type set or map has no two items alike (in its
x-kubernetes-list-map-keys), Time, MicroTime and format date-time are RFC
3339. A JSON null member counts as absent. The
document may also state maxItems, maxLength and enum; they are checked too.
Errors are kube_fields.FieldError with paths like
spec.devices[3].attributes[productName].string. Thread-safe once built.
"""

import json
import re
import threading

import jsonschema

import kube_fields
from kube_fields import FieldError

_META = "io.k8s.apimachinery.pkg."
QUANTITY = _META + "api.resource.Quantity"
_FORMATS = {
    "quantity": (kube_fields.is_quantity,
                 "quantities must match the regular expression "
                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    "date-time": (kube_fields.is_rfc3339, "must be an RFC 3339 date-time "
                  "(e.g. 2006-01-02T15:04:05Z)"),
    "int32": (lambda v: -2**31 <= v < 2**31, "must fit in int32"),
    "int64": (lambda v: -2**63 <= v < 2**63, "must fit in int64"),
}
QUANTITY_DETAIL = _FORMATS["quantity"][1]
# Each format applies to the JSON types it names; others pass it (the type
# check reports them).
_FORMAT_TYPES = {"quantity": (str, int, float), "date-time": str,
                 "int32": int, "int64": int}


class _Refused(Exception):
  """A value a check(errs, path, value) of Schema's checks refused."""

  def __init__(self, errs):
    super().__init__(str(errs))
    self.errs = errs


def _format_checker(checks):
  """The FormatChecker of _FORMATS and checks {name: check(errs, path, v)}.

  A check is called on strings only, with path "": the errors' paths are
  made whole from the jsonschema error.
  """
  checker = jsonschema.FormatChecker(formats=())
  for name, (test, _) in _FORMATS.items():
    checker.checks(name)(
        lambda v, t=test, types=_FORMAT_TYPES[name]: isinstance(v, bool) or
        not isinstance(v, types) or t(v))

  def run(value, check):
    errs = []
    if isinstance(value, str):
      check(errs, "", value)
    if errs:
      raise _Refused(errs)
    return True
  for name, check in (checks or {}).items():
    checker.checks(name, raises=_Refused)(lambda v, c=check: run(v, c))
  return checker


# The keyword of x-kubernetes-list-type set (its value []) and map (the
# x-kubernetes-list-map-keys): no two items alike (in those keys).
_UNIQUE = "uniqueBy"


def _unique_by(validator, keys, instance, schema):
  """Errors of the items of instance that repeat an earlier one."""
  del validator, schema
  seen = set()
  for i, item in enumerate(instance if isinstance(instance, list) else []):
    if keys and isinstance(item, dict):
      key = "/".join(str(item.get(k, "")) for k in keys)
    else:
      key = json.dumps(item, sort_keys=True)
    if key in seen:
      yield jsonschema.ValidationError("duplicate", path=[i], instance=key)
    seen.add(key)


# JSON integers are Python ints; true is not one, 1.0 is not one.
_VALIDATOR = jsonschema.validators.extend(
    jsonschema.Draft7Validator, validators={_UNIQUE: _unique_by},
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, v: isinstance(v, int) and not isinstance(
            v, bool)))


def translate(node):
  """The JSON Schema of one OpenAPI v3 schema node (a new dict)."""
  if not isinstance(node, dict):
    return node
  out = {k: translate(v) if isinstance(v, dict) else
         [translate(x) for x in v] if k in ("allOf", "oneOf", "anyOf") else v
         for k, v in node.items() if not k.startswith("x-") and
         k not in ("description", "default")}
  if "properties" in node:
    out["properties"] = {k: translate(v)
                         for k, v in node["properties"].items()}
    out.setdefault("additionalProperties", False)
  if node.get("x-kubernetes-int-or-string"):
    out["type"] = ["integer", "string"]
  if node.get("x-kubernetes-list-type") == "set":
    out[_UNIQUE] = []
  elif node.get("x-kubernetes-list-type") == "map":
    out[_UNIQUE] = node.get("x-kubernetes-list-map-keys", [])
  if out.get("type") == "integer":
    out.setdefault("format", "int64")
  return out


def translate_document(document, overlay=None):
  """components.schemas of an OpenAPI v3 document as JSON Schema.

  overlay: {schema name: {property: JSON Schema}}, checks the document does
  not state (formats, limits); each is checked with the property's own.
  """
  schemas = {name: translate(node) for name, node in
             document.get("components", {}).get("schemas", {}).items()}
  schemas[QUANTITY] = {"type": ["string", "number"], "format": "quantity"}
  for name in ("Time", "MicroTime"):
    schemas[_META + "apis.meta.v1." + name] = {
        "type": "string", "format": "date-time"}
  add_rules(schemas, overlay or {})
  return schemas


def add_rules(schemas, overlay):
  """Adds overlay ({schema name: {property: JSON Schema}}) to schemas."""
  for name, fields in overlay.items():
    props = schemas[name]["properties"]
    for field, rule in fields.items():
      props[field] = {"allOf": [props[field], rule]}


def _without_nulls(value):
  if isinstance(value, dict):
    return {k: _without_nulls(v) for k, v in value.items() if v is not None}
  if isinstance(value, list):
    return [_without_nulls(v) for v in value]
  return value


def _field_path(error):
  """The Kubernetes field path of a jsonschema error."""
  instance = list(error.absolute_path)
  keywords = list(error.absolute_schema_path)[:-1]
  path, i = "", 0
  while i < len(keywords):
    word = keywords[i]
    if word == "properties":
      path += ("." if path else "") + str(instance.pop(0))
      i += 1
    elif word in ("items", "additionalProperties"):
      path += "[%s]" % instance.pop(0)
    elif word == "propertyNames":
      path += "[%s]" % error.instance
    i += 1
  return path + "".join("[%s]" % k for k in instance)


def _field_errors(error):
  """FieldErrors of one jsonschema error."""
  path = _field_path(error)
  base = path + "." if path else ""
  value, want, kind = error.instance, error.validator_value, error.validator
  if kind == "required":
    return [FieldError(base + n, "Required") for n in want if n not in value]
  if kind == "additionalProperties":
    known = error.schema.get("properties", {})
    return [FieldError(base + k, "Unknown", detail="field not declared in "
                       "the schema (strict field validation)")
            for k in value if k not in known]
  if kind == "type":
    want = " or ".join(want) if isinstance(want, list) else want
    return [FieldError(path, "TypeInvalid", value, "must be of type " + want)]
  if kind == "enum":
    return [FieldError(path, "NotSupported", value, "supported values: " +
                       ", ".join(json.dumps(s) for s in want))]
  if kind == "format" and isinstance(error.cause, _Refused):
    for e in error.cause.errs:
      e.path = path + e.path
    return error.cause.errs
  if kind == "format":
    return [FieldError(path, "Invalid", value, _FORMATS[want][1])]
  if kind == _UNIQUE:
    return [FieldError(path, "Duplicate", value)]
  if kind in ("minLength", "minItems"):
    return [FieldError(path, "Required")]
  if kind == "minimum":
    return [FieldError(path, "Invalid", value, "must be greater than or "
                       "equal to %d" % want)]
  if kind == "maxItems":
    return [FieldError(path, "TooMany", detail="%d: must have at most %d "
                       "items" % (len(value), want))]
  if kind == "maxLength":
    return [FieldError(path, "TooLong",
                       detail="may not be more than %d bytes" % want)]
  return [FieldError(path, "Invalid", value, error.message)]


class Schema:
  """Every schema of one OpenAPI v3 document, ready to check objects."""

  def __init__(self, document, schemas=None, overlay=None, checks=None):
    """document: OpenAPI v3 (or schemas: JSON Schemas already translated);
    overlay: see translate_document; checks: {format name: check(errs,
    path, value)} appending kube_fields.FieldErrors, for the overlay's
    formats."""
    self._schemas = schemas or translate_document(document, overlay)
    self._checker = _format_checker(checks)
    # jsonschema's RefResolver keeps a stack of scopes: one per thread.
    self._local = threading.local()
    refs = re.findall(r'"\$ref": "#/components/schemas/([^"]*)"',
                      json.dumps(self._schemas))
    for name in refs:
      if name not in self._schemas:
        raise ValueError("schema reference to unknown %s" % name)

  @classmethod
  def load(cls, path, overlay=None, checks=None):
    """Reads and translates the document at path (OSError, ValueError)."""
    with open(path, encoding="utf-8") as f:
      return cls(json.load(f), overlay=overlay, checks=checks)

  def check(self, name, value):
    """List of FieldError of value against the named schema."""
    validators = self._local.__dict__
    if name not in validators:
      validators[name] = _VALIDATOR(
          {"$ref": "#/components/schemas/" + name,
           "components": {"schemas": self._schemas}},
          format_checker=self._checker)
    errs = []
    for error in validators[name].iter_errors(_without_nulls(value)):
      errs.extend(_field_errors(error))
    return errs
