#!/usr/bin/python3
"""dra_kinds.py and config_checks.py catch what they claim to: each case
breaks one object of deploy/overlays/dra (a ValidatingAdmissionPolicy, its
binding, a DeviceClass) or a dra.devices list in one way and expects a
problem naming the field; the unbroken objects pass."""

import contextlib
import copy
import io
import os
import sys
import unittest

import yaml

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# pylint: disable=wrong-import-position
import config_checks
import dra_kinds
# pylint: enable=wrong-import-position

DRA = os.path.join(HERE, "..", "..", "deploy", "overlays", "dra")


def load(name):
  with open(os.path.join(DRA, name), encoding="utf-8") as f:
    return [d for d in yaml.safe_load_all(f) if d is not None]


POLICY, BINDING = load("admission-policy.yaml")
GPU_CLASS, MIG_CLASS = load("deviceclasses.yaml")


def spec(o):
  return o["spec"]


def rule(o):
  return o["spec"]["matchConstraints"]["resourceRules"][0]


def validation(o):
  return o["spec"]["validations"][0]


# (name, object, change to a copy of it, text a problem must hold)
CASES = [
    ("policy: failurePolicy", POLICY, lambda o: spec(o).update(
        failurePolicy="Never"),
     'spec.failurePolicy: Unsupported value: "Never": supported values: '
     '"Fail", "Ignore"'),
    ("policy: no matchConstraints", POLICY, lambda o: spec(o).pop(
        "matchConstraints"), "spec.matchConstraints: Required value"),
    ("policy: no resourceRules", POLICY, lambda o: spec(o)[
        "matchConstraints"].pop("resourceRules"),
     "spec.matchConstraints.resourceRules: Required value"),
    ("policy: matchPolicy", POLICY, lambda o: spec(o)[
        "matchConstraints"].update(matchPolicy="Loose"),
     'spec.matchConstraints.matchPolicy: Unsupported value: "Loose"'),
    ("policy: operation", POLICY, lambda o: rule(o)["operations"].append(
        "PATCH"), "spec.matchConstraints.resourceRules[0].operations[3]: "
     'Unsupported value: "PATCH"'),
    ("policy: '*' with others", POLICY, lambda o: rule(o)[
        "operations"].append("*"),
     "resourceRules[0].operations: Invalid value: [\"CREATE\", \"UPDATE\", "
     "\"DELETE\", \"*\"]: if '*' is present, must not specify other "
     "operations"),
    ("policy: no resources", POLICY, lambda o: rule(o).pop("resources"),
     "spec.matchConstraints.resourceRules[0].resources: Required value"),
    ("policy: scope", POLICY, lambda o: rule(o).update(scope="Node"),
     'spec.matchConstraints.resourceRules[0].scope: Unsupported value: '
     '"Node"'),
    ("policy: unknown rule field", POLICY, lambda o: rule(o).update(
        resource="x"), "resourceRules[0].resource: Unknown field"),
    ("policy: condition name", POLICY, lambda o: spec(o)["matchConditions"][
        0].update(name="a b"), "spec.matchConditions[0].name: Invalid value"),
    ("policy: condition without expression", POLICY, lambda o: spec(o)[
        "matchConditions"][0].pop("expression"),
     "spec.matchConditions[0].expression: Required value"),
    ("policy: variables in a condition", POLICY, lambda o: spec(o)[
        "matchConditions"][0].update(expression="variables.userNodeName "
                                     "!= ''"),
     "spec.matchConditions[0].expression: Invalid value: \"variables."
     "userNodeName != ''\": variables.userNodeName: no variables may be "
     "used here"),
    ("policy: variable name", POLICY, lambda o: spec(o)["variables"][
        0].update(name="user-node"), "spec.variables[0].name: Invalid value"),
    ("policy: duplicate variable", POLICY, lambda o: spec(o)["variables"][
        1].update(name="userNodeName"),
     'spec.variables[1].name: Duplicate value: "userNodeName"'),
    ("policy: undeclared variable", POLICY, lambda o: validation(o).update(
        expression="variables.nodeName == ''"),
     "variables.nodeName is not declared in spec.variables"),
    ("policy: unclosed bracket", POLICY, lambda o: spec(o)["variables"][
        1].update(expression="has(object.spec.nodeName"),
     "spec.variables[1].expression: Invalid value: \"has(object.spec."
     "nodeName\": unclosed '(' at offset 3"),
    ("policy: open string", POLICY, lambda o: validation(o).update(
        messageExpression="'node " + "x"),
     "spec.validations[0].messageExpression: Invalid value: \"'node x\": "
     "unterminated string literal (')"),
    ("policy: message with a line break", POLICY, lambda o: validation(
        o).update(message="one\ntwo"),
     "spec.validations[0].message: Invalid value: \"one\\ntwo\": message "
     "must not contain line breaks"),
    ("policy: reason", POLICY, lambda o: validation(o).update(
        reason="Teapot"), 'spec.validations[0].reason: Unsupported value: '
     '"Teapot"'),
    ("policy: no validations", POLICY, lambda o: spec(o).pop("validations"),
     "spec.validations: Required value: validations or auditAnnotations "
     "must contain at least one item"),
    ("policy: unknown spec field", POLICY, lambda o: spec(o).update(
        validation=[]), "spec.validation: Unknown field"),
    ("policy: namespace", POLICY, lambda o: o["metadata"].update(
        namespace="kube-system"),
     "metadata.namespace: Forbidden: not allowed on this type"),
    ("binding: no policyName", BINDING, lambda o: spec(o).pop("policyName"),
     "spec.policyName: Required value"),
    ("binding: policyName", BINDING, lambda o: spec(o).update(
        policyName="Policy"), 'spec.policyName: Invalid value: "Policy"'),
    ("binding: no actions", BINDING, lambda o: spec(o).update(
        validationActions=[]), "spec.validationActions: Required value"),
    ("binding: unknown action", BINDING, lambda o: spec(o).update(
        validationActions=["Block"]),
     'spec.validationActions[0]: Unsupported value: "Block": supported '
     'values: "Audit", "Deny", "Warn"'),
    ("binding: duplicate action", BINDING, lambda o: spec(o).update(
        validationActions=["Deny", "Deny"]),
     'spec.validationActions[1]: Duplicate value: "Deny"'),
    ("binding: Deny and Warn", BINDING, lambda o: spec(o).update(
        validationActions=["Deny", "Warn"]),
     "spec.validationActions: Invalid value: [\"Deny\", \"Warn\"]: must not "
     "contain both Deny and Warn"),
    ("class: empty selector", GPU_CLASS, lambda o: spec(o)["selectors"][0][
        "cel"].update(expression=""),
     "spec.selectors[0].cel.expression: Required value"),
    ("class: extended resource", MIG_CLASS, lambda o: spec(o).update(
        extendedResourceName="gpu"),
     'spec.extendedResourceName: Invalid value: "gpu": must be a valid '
     "extended resource name"),
    ("class: namespace", GPU_CLASS, lambda o: o["metadata"].update(
        namespace="kube-system"), "metadata.namespace: Forbidden"),
    ("class: name", GPU_CLASS, lambda o: o["metadata"].update(
        name="GPU"), 'metadata.name: Invalid value: "GPU"'),
]

# Cases only the OpenAPI schema catches (skipped without it).
SCHEMA_CASES = [
    ("class: unknown field", GPU_CLASS, lambda o: spec(o).update(
        selector=[]), "spec.selector: Unknown field"),
    ("class: wrong type", MIG_CLASS, lambda o: spec(o).update(
        selectors={"cel": {}}), "spec.selectors: Invalid value"),
]


class DraKindsTest(unittest.TestCase):

  def check(self, cases):
    for name, obj, change, want in cases:
      with self.subTest(name):
        broken = copy.deepcopy(obj)
        change(broken)
        problems = dra_kinds.check_object(broken)
        self.assertTrue(any(want in p for p in problems),
                        f"no problem holds {want!r}: {problems}")

  def test_overlay_objects_pass(self):
    for obj in (POLICY, BINDING, GPU_CLASS, MIG_CLASS):
      with self.subTest(obj["metadata"]["name"]):
        self.assertEqual(dra_kinds.check_object(obj), [])

  def test_each_break_is_named(self):
    self.check(CASES)

  @unittest.skipUnless(os.path.exists(dra_kinds.OPENAPI),
                       f"{dra_kinds.OPENAPI} absent (CI has it)")
  def test_schema_breaks_are_named(self):
    self.check(SCHEMA_CASES)

  def test_no_schema_prints_a_note_and_still_checks_rules(self):
    broken = copy.deepcopy(GPU_CLASS)
    spec(broken)["selectors"][0]["cel"]["expression"] = ""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      problems = dra_kinds.check_object(broken, "/nonexistent/openapi.json")
    self.assertIn("NOTE: /nonexistent/openapi.json not found", out.getvalue())
    self.assertTrue(any("spec.selectors[0].cel.expression: Required" in p
                        for p in problems), problems)

  def test_other_kinds_go_to_k8s_schema(self):
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
           "metadata": {"name": "x"}}
    self.assertIn("is not a kind this test knows",
                  dra_kinds.check_object(obj)[0])

  def test_cel_lexical(self):
    for expr in [v["expression"] for v in spec(POLICY)["variables"]] + [
        validation(POLICY)["messageExpression"], "'a\\'(' == \"]\""]:
      self.assertEqual(dra_kinds.cel_lexical_problem(expr), "", expr)
    self.assertIn("unbalanced ')'", dra_kinds.cel_lexical_problem("a)"))


class DraDevicesTest(unittest.TestCase):

  def test_good(self):
    for devices in ("all", 2, ["0", 1, "0:1", "GPU-" + "0" * 8 + "-0000-"
                               "0000-0000-" + "0" * 12,
                               "MIG-" + "a" * 8 + "-aaaa-aaaa-aaaa-" + "a" * 12,
                               "MIG-GPU-" + "b" * 8 + "-bbbb-bbbb-bbbb-" +
                               "b" * 12 + "/1/0"]):
      problems = []
      config_checks.check_dra_devices(devices, "dra.devices", problems)
      self.assertEqual(problems, [], devices)

  def test_bad(self):
    for devices, want in (
        (0, "dra.devices: a number of devices must be at least 1, got 0"),
        ([], "dra.devices: must be 'all', a number of devices or a non-empty "
             "list"),
        ("some", "dra.devices: must be 'all'"),
        (["0", "GPU-x"], "dra.devices[1]: 'GPU-x' is not a GPU index"),
        (["0", 0], "dra.devices[1]: '0' is already listed at [0]"),
        ([True], "dra.devices[0]: True is not a GPU index")):
      problems = []
      config_checks.check_dra_devices(devices, "dra.devices", problems)
      self.assertTrue(any(want in p for p in problems), (want, problems))


if __name__ == "__main__":
  unittest.main()
