"""Offline checks of the kinds python3-kubernetes 22.6 has no models for.

  problems = check_object(obj)   # any kind; [] if the API server would take it

resource.k8s.io/v1 DeviceClass: the upstream OpenAPI schemas of 1.34 and
1.36 (../shared/k8s-openapi/ from the repository root, checked by
tests/kube/kube_schema.py, the API server emulator's checker) and the API
server's DeviceClass rules (tests/kube/kube_dra_rules.py) of
every release the emulator knows (1.34 to 1.36). Without a schema file its
schema part is skipped and a note saying so is printed once; the rules
still run.

admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
ValidatingAdmissionPolicyBinding: a JSON Schema of their fields (types,
required fields, enums, names, unknown fields refused) checked by
kube_schema, after kube-apiserver's pkg/apis/admissionregistration/
validation, then the rules across fields (duplicates, '*' alone, Deny with
Warn, messages) and a lexical check of each CEL expression (closed quotes
and brackets, `variables.<name>` naming a variable declared before). CEL is
not compiled.

Every other kind goes to k8s_schema.check_object. Problems are strings that
start with the field's path, as kube-apiserver words them.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # No __pycache__ in tests/kube.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "kube"))
# pylint: disable=wrong-import-position
import k8s_schema
import kube_dra_common
import kube_dra_rules
import kube_fields as kf
import kube_meta
import kube_schema

_OPENAPI_DIR = os.path.normpath(os.path.join(
    _HERE, "..", "..", "..", "shared", "k8s-openapi"))
# The OpenAPI documents a DeviceClass must pass: that of 1.34 and 1.35
# (OPENAPI) and 1.36's.
OPENAPI = os.path.join(_OPENAPI_DIR, "resource.k8s.io-v1.json")
OPENAPI_136 = os.path.join(_OPENAPI_DIR,
                           "resource.k8s.io-v1-release-1.36.json")
# The releases whose DeviceClass rules apply (kube_dra_rules.DraRules).
KUBE_MINORS = (34, 35, 36)
DEVICE_CLASS = ("resource.k8s.io/v1", "DeviceClass")
VAP = ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy")
VAP_BINDING = ("admissionregistration.k8s.io/v1",
               "ValidatingAdmissionPolicyBinding")

_VARIABLE_REF = re.compile(r"\bvariables\.([A-Za-z_][A-Za-z0-9_]*)")

def _obj(required=(), **props):
  return {"type": "object", "properties": props, "required": list(required)}


def _strings(**extra):
  return dict({"type": "array", "items": {"type": "string"}}, **extra)


def _list(item, **extra):
  return dict({"type": "array", "items": item}, **extra)


_STR = {"type": "string"}
_NAME = {"type": "string", "format": "qualified-name"}
_RULE = _obj(("apiGroups", "apiVersions", "operations", "resources"),
             apiGroups=_strings(minItems=1), apiVersions=_strings(minItems=1),
             resources=_strings(minItems=1),
             operations=_list({"enum": ["*", "CONNECT", "CREATE", "DELETE",
                                        "UPDATE"]}, minItems=1),
             resourceNames=_strings(), scope={
                 "enum": ["*", "Cluster", "Namespaced"]})
_SELECTOR = _obj(matchLabels={"type": "object",
                              "additionalProperties": _STR},
                 matchExpressions={"type": "array"})
_MATCH = _obj(excludeResourceRules=_list(_RULE),
              matchPolicy={"enum": ["Equivalent", "Exact"]},
              namespaceSelector=_SELECTOR, objectSelector=_SELECTOR,
              resourceRules=_list(_RULE))
# The admissionregistration.k8s.io/v1 kinds python3-kubernetes 22.6 lacks,
# as JSON Schema (kube_schema.translate refuses unknown fields), after
# kube-apiserver's pkg/apis/admissionregistration/validation.
_VAP_SCHEMAS = {
    VAP[1]: _obj(("spec",), apiVersion=_STR, kind=_STR, metadata={},
                 spec=_obj(
                     ("matchConstraints",),
                     failurePolicy={"enum": ["Fail", "Ignore"]},
                     paramKind=_obj(("apiVersion", "kind"), apiVersion=_STR,
                                    kind=_STR),
                     matchConstraints=_obj(("resourceRules",), **dict(
                         _MATCH["properties"],
                         resourceRules=_list(_RULE, minItems=1))),
                     matchConditions=_list(_obj(
                         ("name", "expression"), name=_NAME,
                         expression=_STR), maxItems=64),
                     variables=_list(_obj(
                         ("name", "expression"), expression=_STR, name={
                             "type": "string", "format": "c-identifier"})),
                     validations=_list(_obj(
                         ("expression",), expression=_STR, message=_STR,
                         messageExpression=_STR, reason={"enum": [
                             "Forbidden", "Invalid",
                             "RequestEntityTooLarge"]})),
                     auditAnnotations=_list(_obj(
                         ("key", "valueExpression"), key=_STR,
                         valueExpression=_STR)))),
    VAP_BINDING[1]: _obj(("spec",), apiVersion=_STR, kind=_STR, metadata={},
                         spec=_obj(
                             ("policyName", "validationActions"),
                             policyName={"type": "string",
                                         "format": "dns-subdomain"},
                             matchResources=_MATCH, paramRef={},
                             validationActions=_list({"enum": [
                                 "Audit", "Deny", "Warn"]}, minItems=1))),
}
_VAP_SCHEMA = kube_schema.Schema(None, schemas={
    k: kube_schema.translate(v) for k, v in _VAP_SCHEMAS.items()}, checks=dict(
        kube_dra_common.CHECKS, **{"c-identifier": lambda errs, path, v: (
            kf.check_c_identifier(errs, path, v, 1024))}))

_schema = {}  # path -> kube_schema.Schema, or None when the file is absent


def load_schema(path=None):
  """The compiled schema at path (default OPENAPI); None (after printing a
  note, once per path) if the file is absent."""
  path = path or OPENAPI
  if path not in _schema:
    if os.path.exists(path):
      _schema[path] = kube_schema.Schema.load(
          path, kube_dra_common.field_rules(max(KUBE_MINORS)),
          kube_dra_common.CHECKS)
    else:
      print(f"NOTE: {path} not found: DeviceClasses are checked against the "
            "API server's rules only, not the resource.k8s.io/v1 OpenAPI "
            "schema (CI has the file)")
      _schema[path] = None
  return _schema[path]


def check_object(obj, schema_path=None):
  """Every problem the API server would refuse obj for; [] if none.

  schema_path: the one OpenAPI document for DeviceClasses (default: both
  OPENAPI and OPENAPI_136).
  """
  if not isinstance(obj, dict):
    return k8s_schema.check_object(obj)
  key = (obj.get("apiVersion"), obj.get("kind"))
  if key == DEVICE_CLASS:
    paths = [schema_path] if schema_path else [OPENAPI, OPENAPI_136]
    return check_device_class(obj, [load_schema(p) for p in paths])
  if key in (VAP, VAP_BINDING):
    errs = _VAP_SCHEMA.check(key[1], obj)
    kube_meta.check_object_meta(errs, obj.get("metadata"), namespaced=False)
    spec = obj.get("spec")
    if isinstance(spec, dict) and key == VAP:
      _check_policy_spec(errs, spec)
    elif isinstance(spec, dict):
      _check_binding_spec(errs, spec)
    return [str(e) for e in errs]
  return k8s_schema.check_object(obj)


def check_device_class(obj, schemas):
  """The problems of the schemas present, else those of every release's
  rules."""
  found = []
  for schema in schemas:
    if schema is not None:
      found += [str(e) for e in schema.check(
          "io.k8s.api.resource.v1.DeviceClass", obj) if str(e) not in found]
  if found:
    return found
  for minor in KUBE_MINORS:
    for e in kube_dra_rules.DraRules(minor).check_class(obj, None):
      text = str(e)
      if text not in found:
        found.append(text)
  return found


def _dicts(value):
  """The objects in value, a list (the schema reports other types)."""
  return [v for v in value if isinstance(v, dict)] if isinstance(
      value, list) else []


def _check_policy_spec(errs, spec):
  mc = spec.get("matchConstraints")
  for field in ("resourceRules", "excludeResourceRules"):
    for i, rule in enumerate(_dicts((mc or {}).get(field))):
      _check_rule(errs, f"spec.matchConstraints.{field}[{i}]", rule)
  names = set()
  for i, c in enumerate(_dicts(spec.get("matchConditions"))):
    name = c.get("name")
    if name in names:
      kf.duplicate(errs, f"spec.matchConditions[{i}].name", name)
    names.add(name)
    _check_expression(errs, f"spec.matchConditions[{i}].expression",
                      c.get("expression"), None)
  declared = []
  for i, v in enumerate(_dicts(spec.get("variables"))):
    name = v.get("name")
    if name in declared:
      kf.duplicate(errs, f"spec.variables[{i}].name", name)
    # A variable may use the ones declared before it.
    _check_expression(errs, f"spec.variables[{i}].expression",
                      v.get("expression"), declared)
    declared.append(name)
  validations = _dicts(spec.get("validations"))
  audits = _dicts(spec.get("auditAnnotations"))
  if not validations and not audits:
    kf.required(errs, "spec.validations", "validations or auditAnnotations "
                "must contain at least one item")
  for i, v in enumerate(validations):
    path = f"spec.validations[{i}]"
    for field in ("expression", "messageExpression"):
      if field == "expression" or v.get(field) is not None:
        _check_expression(errs, f"{path}.{field}", v.get(field), declared)
    message = v.get("message")
    if isinstance(message, str) and not message.strip():
      kf.invalid(errs, f"{path}.message", message,
                 "message must be non-empty if specified")
    elif isinstance(message, str) and ("\n" in message.strip() or
                                       "\r" in message):
      kf.invalid(errs, f"{path}.message", message,
                 "message must not contain line breaks")
  for i, a in enumerate(audits):
    _check_expression(errs, f"spec.auditAnnotations[{i}].valueExpression",
                      a.get("valueExpression"), declared)


def _check_binding_spec(errs, spec):
  actions = spec.get("validationActions")
  actions = actions if isinstance(actions, list) else []
  for i, a in enumerate(actions):
    if a in actions[:i]:
      kf.duplicate(errs, f"spec.validationActions[{i}]", a)
  if "Deny" in actions and "Warn" in actions:
    kf.invalid(errs, "spec.validationActions", actions,
               "must not contain both Deny and Warn")


def _check_rule(errs, path, rule):
  ops = rule.get("operations")
  if isinstance(ops, list) and len(ops) > 1 and "*" in ops:
    kf.invalid(errs, f"{path}.operations", ops,
               "if '*' is present, must not specify other operations")
  for field in ("apiGroups", "apiVersions"):
    values = rule.get(field)
    if isinstance(values, list) and len(values) > 1 and "*" in values:
      kf.invalid(errs, f"{path}.{field}", values,
                 "if '*' is present, must have a length of 1")
  names = rule.get("resourceNames") or []
  if len(set(map(str, names))) != len(names):
    kf.invalid(errs, f"{path}.resourceNames", names, "duplicate names")


def _check_expression(errs, path, expression, declared):
  """Non-empty; quotes and brackets closed; variables.X declared.

  declared: the variable names in scope, or None where none may be used.
  """
  if not isinstance(expression, str) or not expression.strip():
    if isinstance(expression, str):
      kf.required(errs, path)
    return
  problem = cel_lexical_problem(expression)
  if problem:
    kf.invalid(errs, path, expression, problem)
    return
  for name in _VARIABLE_REF.findall(_without_strings(expression)):
    if declared is None:
      kf.invalid(errs, path, expression,
                 f"variables.{name}: no variables may be used here")
    elif name not in declared:
      kf.invalid(errs, path, expression,
                 f"variables.{name} is not declared in spec.variables "
                 "(before this one)")


def _without_strings(expression):
  """expression with the contents of its string literals blanked."""
  out, quote, i = [], None, 0
  while i < len(expression):
    ch = expression[i]
    if quote:
      if ch == "\\":
        i += 2
        continue
      if ch == quote:
        quote = None
        out.append(ch)
    else:
      if ch in "'\"":
        quote = ch
      out.append(ch)
    i += 1
  return "".join(out)


def cel_lexical_problem(expression):
  """Why expression cannot be CEL (an open quote or bracket); "" if none."""
  stack, quote, i = [], None, 0
  pairs = {")": "(", "]": "[", "}": "{"}
  while i < len(expression):
    ch = expression[i]
    if quote:
      if ch == "\\":
        i += 2
        continue
      if ch == quote:
        quote = None
    elif ch in "'\"":
      quote = ch
    elif ch in "([{":
      stack.append((ch, i))
    elif ch in pairs:
      if not stack or stack[-1][0] != pairs[ch]:
        return f"unbalanced {ch!r} at offset {i}"
      stack.pop()
    i += 1
  if quote:
    return f"unterminated string literal ({quote})"
  if stack:
    return f"unclosed {stack[-1][0]!r} at offset {stack[-1][1]}"
  return ""
