"""The OpenAPI v3 schema of an API group, compiled into checks.

  schema = Schema.load(path)          # raises OSError / ValueError
  errs = schema.check("io.k8s.api.resource.v1.ResourceSlice", obj)

Compiling turns each schema under components.schemas into a Python closure
once (resolving $ref and allOf), so checking an object walks the object, not
the JSON of the schema. The checks are those of a strict decoder: JSON types
(string, integer, number, boolean, object, array), int32/int64 ranges, the
required properties, enums, unknown properties (refused, as strict field
validation does), Quantity (must parse as a resource.Quantity) and Time /
format date-time (RFC 3339). A JSON null is treated as an absent field.
Errors are kube_fields.FieldError with paths like
spec.devices[3].attributes[productName].string. Thread-safe once built.
"""

import json

import kube_fields
from kube_fields import FieldError

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"

_INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}
_TYPE_NAMES = {"string": "string", "integer": "integer", "number": "number",
               "boolean": "boolean", "object": "object", "array": "array"}


def _type_error(errs, path, value, want):
  errs.append(FieldError(path, "TypeInvalid", value,
                         "must be of type " + want))


def _check_quantity(value, path, errs):
  if not kube_fields.is_quantity(value):
    errs.append(FieldError(path, "Invalid", value, "quantities must match the "
                           "regular expression '^([+-]?[0-9.]+)"
                           "([eEinumkKMGTP]*[-+]?[0-9]*)$'"))


def _check_time(value, path, errs):
  if not kube_fields.is_rfc3339(value):
    errs.append(FieldError(path, "Invalid", value,
                           "must be an RFC 3339 date-time "
                           "(e.g. 2006-01-02T15:04:05Z)"))


class Schema:
  """Compiled checks for every schema of one OpenAPI v3 document."""

  def __init__(self, document):
    self._raw = document.get("components", {}).get("schemas", {})
    self._compiled = {}
    for name in self._raw:
      self._named(name)

  @classmethod
  def load(cls, path):
    """Reads and compiles the document at path (OSError, ValueError)."""
    with open(path, encoding="utf-8") as f:
      return cls(json.load(f))

  def check(self, name, value, path=""):
    """List of FieldError of value against the named schema."""
    errs = []
    self._compiled[name][0](value, path, errs)
    return errs

  def _named(self, name):
    """A one-element list holding the check of a named schema.

    The list is created before compiling so that recursive references
    resolve to it; its element is filled in afterwards.
    """
    cell = self._compiled.get(name)
    if cell is not None:
      return cell
    cell = [None]
    self._compiled[name] = cell
    if name == QUANTITY:
      cell[0] = _check_quantity
    elif name in (TIME, MICRO_TIME):
      cell[0] = _check_time
    elif name not in self._raw:
      raise ValueError("schema reference to unknown %s" % name)
    else:
      cell[0] = self._compile(self._raw[name])
    return cell

  def _compile(self, node):
    """The check function(value, path, errs) of one schema node."""
    checks = []
    if "$ref" in node:
      cell = self._named(node["$ref"].rsplit("/", 1)[-1])
      checks.append(lambda v, p, e: cell[0](v, p, e))
    for sub in node.get("allOf", ()):
      checks.append(self._compile(sub))
    if "oneOf" in node:
      checks.append(self._compile_one_of(node["oneOf"]))
    own = self._compile_own(node)
    if own is not None:
      checks.append(own)
    if not checks:
      return lambda v, p, e: None
    if len(checks) == 1:
      return checks[0]

    def check_all(value, path, errs):
      for check in checks:
        check(value, path, errs)
    return check_all

  def _compile_one_of(self, alternatives):
    subs = [self._compile(a) for a in alternatives]

    def check_one_of(value, path, errs):
      for sub in subs:
        trial = []
        sub(value, path, trial)
        if not trial:
          return
      errs.append(FieldError(path, "Invalid", value,
                             "must match one of the allowed schemas"))
    return check_one_of

  def _compile_own(self, node):
    """The check of node's own type/properties/items, or None."""
    kind = node.get("type")
    if kind is None and ("properties" in node or
                         "additionalProperties" in node):
      kind = "object"
    enum = node.get("enum")
    if kind == "object":
      base = self._compile_object(node)
    elif kind == "array":
      base = self._compile_array(node)
    elif kind == "string":
      base = self._compile_string(node)
    elif kind == "integer":
      base = self._compile_integer(node)
    elif kind == "number":
      def base(value, path, errs):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
          _type_error(errs, path, value, "number")
    elif kind == "boolean":
      def base(value, path, errs):
        if not isinstance(value, bool):
          _type_error(errs, path, value, "boolean")
    elif kind is None:
      base = None
    else:
      raise ValueError("unsupported schema type %r" % kind)
    if not enum:
      return base
    allowed = list(enum)

    def check_enum(value, path, errs):
      if base is not None:
        before = len(errs)
        base(value, path, errs)
        if len(errs) != before:
          return
      if value not in allowed:
        kube_fields.not_supported(errs, path, value, allowed)
    return check_enum

  def _compile_string(self, node):
    date_time = node.get("format") == "date-time"

    def check_string(value, path, errs):
      if not isinstance(value, str):
        _type_error(errs, path, value, "string")
      elif date_time:
        _check_time(value, path, errs)
    return check_string

  def _compile_integer(self, node):
    low, high = _INT_RANGES.get(node.get("format"), _INT_RANGES["int64"])
    fmt = node.get("format", "int64")

    def check_integer(value, path, errs):
      if isinstance(value, bool) or not isinstance(value, int):
        _type_error(errs, path, value, "integer")
      elif not low <= value <= high:
        errs.append(FieldError(path, "Invalid", value,
                               "must fit in %s" % fmt))
    return check_integer

  def _compile_array(self, node):
    items = self._compile(node["items"]) if "items" in node else None

    def check_array(value, path, errs):
      if not isinstance(value, list):
        _type_error(errs, path, value, "array")
        return
      if items is None:
        return
      for i, item in enumerate(value):
        if item is not None:
          items(item, "%s[%d]" % (path, i), errs)
    return check_array

  def _compile_object(self, node):
    props = {k: self._compile(v)
             for k, v in node.get("properties", {}).items()}
    extra_node = node.get("additionalProperties")
    extra = None
    if isinstance(extra_node, dict):
      extra = self._compile(extra_node)
    # No properties and no additionalProperties (RawExtension, FieldsV1):
    # any content. additionalProperties: true: any extra member.
    free = (not props and extra_node is None) or extra_node is True
    required = tuple(node.get("required", ()))
    prefix_dot = "."

    def check_object(value, path, errs):
      if not isinstance(value, dict):
        _type_error(errs, path, value, "object")
        return
      base = path + prefix_dot if path else ""
      for name in required:
        if value.get(name) is None:
          errs.append(FieldError(base + name, "Required"))
      for key, member in value.items():
        if member is None:
          continue
        check = props.get(key)
        if check is not None:
          check(member, base + key, errs)
        elif extra is not None:
          extra(member, "%s[%s]" % (path, key), errs)
        elif not free:
          errs.append(FieldError(base + key, "Unknown",
                                 detail="field not declared in the schema "
                                 "(strict field validation)"))
    return check_object
