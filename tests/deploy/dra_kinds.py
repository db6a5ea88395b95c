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
ValidatingAdmissionPolicyBinding: explicit structural rules after
kube-apiserver's pkg/apis/admissionregistration/validation (required
fields, failurePolicy, matchPolicy, operations, scope, validationActions,
reason, names), plus a lexical check of each CEL expression (closed quotes
and brackets, `variables.<name>` naming a declared variable). CEL is not
compiled.

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
# (OPENAPI, which --openapi of validate_manifests.py replaces) and 1.36's.
OPENAPI = os.path.join(_OPENAPI_DIR, "resource.k8s.io-v1.json")
OPENAPI_136 = os.path.join(_OPENAPI_DIR,
                           "resource.k8s.io-v1-release-1.36.json")
# The releases whose DeviceClass rules apply (kube_dra_rules.DraRules).
KUBE_MINORS = (34, 35, 36)
DEVICE_CLASS = ("resource.k8s.io/v1", "DeviceClass")
VAP = ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy")
VAP_BINDING = ("admissionregistration.k8s.io/v1",
               "ValidatingAdmissionPolicyBinding")

_FAILURE_POLICIES = ("Fail", "Ignore")
_MATCH_POLICIES = ("Equivalent", "Exact")
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_ACTIONS = ("Audit", "Deny", "Warn")
_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
_SPEC_FIELDS = {
    VAP: ("auditAnnotations", "failurePolicy", "matchConditions",
          "matchConstraints", "paramKind", "validations", "variables"),
    VAP_BINDING: ("matchResources", "paramRef", "policyName",
                  "validationActions"),
}
_MATCH_FIELDS = ("excludeResourceRules", "matchPolicy", "namespaceSelector",
                 "objectSelector", "resourceRules")
_RULE_FIELDS = ("apiGroups", "apiVersions", "operations", "resourceNames",
                "resources", "scope")
_VARIABLE_REF = re.compile(r"\bvariables\.([A-Za-z_][A-Za-z0-9_]*)")

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
    errs = []
    _check_top(errs, obj, key)
    if key == VAP:
      _check_policy_spec(errs, obj.get("spec"))
    else:
      _check_binding_spec(errs, obj.get("spec"))
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


def _check_top(errs, obj, key):
  for field in obj:
    if field not in ("apiVersion", "kind", "metadata", "spec"):
      errs.append(kf.FieldError(field, "Unknown", detail=f"not in {key[1]}"))
  kube_meta.check_object_meta(errs, obj.get("metadata"), namespaced=False)
  spec = obj.get("spec")
  if not isinstance(spec, dict):
    kf.required(errs, "spec")
    return
  for field in spec:
    if field not in _SPEC_FIELDS[key]:
      errs.append(kf.FieldError(f"spec.{field}", "Unknown",
                                detail=f"not in {key[1]}Spec"))


def _list_of_dicts(errs, path, value):
  if value is None:
    return []
  if not isinstance(value, list) or not all(isinstance(v, dict)
                                            for v in value):
    kf.invalid(errs, path, value, "must be a list of objects")
    return []
  return value


def _check_policy_spec(errs, spec):
  if not isinstance(spec, dict):
    return
  failure = spec.get("failurePolicy")
  if failure is not None and failure not in _FAILURE_POLICIES:
    kf.not_supported(errs, "spec.failurePolicy", failure, _FAILURE_POLICIES)
  param = spec.get("paramKind")
  if param is not None:
    for field in ("apiVersion", "kind"):
      if not isinstance(param, dict) or not param.get(field):
        kf.required(errs, f"spec.paramKind.{field}")
  mc = spec.get("matchConstraints")
  if not isinstance(mc, dict):
    kf.required(errs, "spec.matchConstraints")
  else:
    _check_match_resources(errs, "spec.matchConstraints", mc)
    if not mc.get("resourceRules"):
      kf.required(errs, "spec.matchConstraints.resourceRules",
                  "at least one rule, to give the expressions their types")
  conditions = _list_of_dicts(errs, "spec.matchConditions",
                              spec.get("matchConditions"))
  if len(conditions) > 64:
    kf.too_many(errs, "spec.matchConditions", len(conditions), 64)
  names = set()
  for i, c in enumerate(conditions):
    path = f"spec.matchConditions[{i}]"
    name = c.get("name")
    if not isinstance(name, str) or not name:
      kf.required(errs, f"{path}.name")
    else:
      kf.check_qualified_name(errs, f"{path}.name", name)
      if name in names:
        kf.duplicate(errs, f"{path}.name", name)
      names.add(name)
    _check_expression(errs, f"{path}.expression", c.get("expression"), None)
  variables = _list_of_dicts(errs, "spec.variables", spec.get("variables"))
  declared = []
  for i, v in enumerate(variables):
    path = f"spec.variables[{i}]"
    name = v.get("name")
    if not isinstance(name, str) or not name.strip():
      kf.required(errs, f"{path}.name", "name is not specified")
    else:
      kf.check_c_identifier(errs, f"{path}.name", name, 1024)
      if name in declared:
        kf.duplicate(errs, f"{path}.name", name)
    # A variable may use the ones declared before it.
    _check_expression(errs, f"{path}.expression", v.get("expression"),
                      declared)
    if isinstance(name, str):
      declared.append(name)
  validations = _list_of_dicts(errs, "spec.validations",
                               spec.get("validations"))
  audits = _list_of_dicts(errs, "spec.auditAnnotations",
                          spec.get("auditAnnotations"))
  if not validations and not audits:
    kf.required(errs, "spec.validations", "validations or auditAnnotations "
                "must contain at least one item")
  for i, v in enumerate(validations):
    _check_validation(errs, f"spec.validations[{i}]", v, declared)
  for i, a in enumerate(audits):
    path = f"spec.auditAnnotations[{i}]"
    if not a.get("key"):
      kf.required(errs, f"{path}.key")
    _check_expression(errs, f"{path}.valueExpression",
                      a.get("valueExpression"), declared)


def _check_validation(errs, path, v, declared):
  _check_expression(errs, f"{path}.expression", v.get("expression"), declared)
  message = v.get("message")
  if message is not None:
    if not isinstance(message, str) or not message.strip():
      kf.invalid(errs, f"{path}.message", message,
                 "message must be non-empty if specified")
    elif "\n" in message.strip() or "\r" in message:
      kf.invalid(errs, f"{path}.message", message,
                 "message must not contain line breaks")
  if v.get("messageExpression") is not None:
    _check_expression(errs, f"{path}.messageExpression",
                      v.get("messageExpression"), declared)
  reason = v.get("reason")
  if reason is not None and reason not in _REASONS:
    kf.not_supported(errs, f"{path}.reason", reason, _REASONS)


def _check_binding_spec(errs, spec):
  if not isinstance(spec, dict):
    return
  name = spec.get("policyName")
  if not isinstance(name, str) or not name:
    kf.required(errs, "spec.policyName")
  else:
    kf.check_dns_subdomain(errs, "spec.policyName", name)
  if spec.get("matchResources") is not None:
    if not isinstance(spec["matchResources"], dict):
      kf.invalid(errs, "spec.matchResources", spec["matchResources"],
                 "must be an object")
    else:
      _check_match_resources(errs, "spec.matchResources",
                             spec["matchResources"])
  actions = spec.get("validationActions")
  if not isinstance(actions, list) or not actions:
    kf.required(errs, "spec.validationActions",
                "at least one validation action is required")
    return
  seen = set()
  for i, a in enumerate(actions):
    if a not in _ACTIONS:
      kf.not_supported(errs, f"spec.validationActions[{i}]", a, _ACTIONS)
    elif a in seen:
      kf.duplicate(errs, f"spec.validationActions[{i}]", a)
    seen.add(a)
  if "Deny" in seen and "Warn" in seen:
    kf.invalid(errs, "spec.validationActions", actions,
               "must not contain both Deny and Warn")


def _check_match_resources(errs, path, mc):
  for field in mc:
    if field not in _MATCH_FIELDS:
      errs.append(kf.FieldError(f"{path}.{field}", "Unknown",
                                detail="not in MatchResources"))
  policy = mc.get("matchPolicy")
  if policy is not None and policy not in _MATCH_POLICIES:
    kf.not_supported(errs, f"{path}.matchPolicy", policy, _MATCH_POLICIES)
  for field in ("namespaceSelector", "objectSelector"):
    sel = mc.get(field)
    if sel is not None and (not isinstance(sel, dict) or any(
        k not in ("matchLabels", "matchExpressions") for k in sel)):
      kf.invalid(errs, f"{path}.{field}", sel, "must be a label selector")
  for field in ("resourceRules", "excludeResourceRules"):
    for i, rule in enumerate(_list_of_dicts(errs, f"{path}.{field}",
                                            mc.get(field))):
      _check_rule(errs, f"{path}.{field}[{i}]", rule)


def _check_rule(errs, path, rule):
  for field in rule:
    if field not in _RULE_FIELDS:
      errs.append(kf.FieldError(f"{path}.{field}", "Unknown",
                                detail="not in NamedRuleWithOperations"))
  ops = rule.get("operations")
  if not isinstance(ops, list) or not ops:
    kf.required(errs, f"{path}.operations")
    ops = []
  if len(ops) > 1 and "*" in ops:
    kf.invalid(errs, f"{path}.operations", ops,
               "if '*' is present, must not specify other operations")
  for i, op in enumerate(ops):
    if op not in _OPERATIONS:
      kf.not_supported(errs, f"{path}.operations[{i}]", op, _OPERATIONS)
  for field in ("apiGroups", "apiVersions", "resources"):
    values = rule.get(field)
    if not isinstance(values, list) or not values:
      kf.required(errs, f"{path}.{field}")
      continue
    if not all(isinstance(v, str) for v in values):
      kf.invalid(errs, f"{path}.{field}", values, "must be strings")
    elif len(values) > 1 and "*" in values and field != "resources":
      kf.invalid(errs, f"{path}.{field}", values,
                 "if '*' is present, must have a length of 1")
  scope = rule.get("scope")
  if scope is not None and scope not in _SCOPES:
    kf.not_supported(errs, f"{path}.scope", scope, _SCOPES)
  names = rule.get("resourceNames") or []
  if len(set(map(str, names))) != len(names):
    kf.invalid(errs, f"{path}.resourceNames", names, "duplicate names")


def _check_expression(errs, path, expression, declared):
  """Non-empty; quotes and brackets closed; variables.X declared.

  declared: the variable names in scope, or None where none may be used.
  """
  if not isinstance(expression, str) or not expression.strip():
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
