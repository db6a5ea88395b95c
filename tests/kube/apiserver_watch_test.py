#!/usr/bin/python3
"""Watch tests of the Kubernetes API server emulator (apiserver.py).

Run from apiserver_test.py (or alone). Events are read on a thread into a
queue and awaited with generous deadlines, never by sleeping.
"""

import os
import queue
import sys
import threading
import time
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from emulator_fixture import Emulator, claim, gpu_slice

_DEADLINE = 20


class Watch:
  """A watch read on a thread; events() waits for the next n."""

  def __init__(self, client, resource, **kwargs):
    self.queue = queue.Queue()
    self.ended = threading.Event()

    def run():
      try:
        for event in client.watch(resource, **kwargs):
          self.queue.put(event)
      except Exception as e:  # pylint: disable=broad-except
        self.queue.put({"type": "EXCEPTION", "object": repr(e)})
      finally:
        self.ended.set()
    threading.Thread(target=run, daemon=True).start()

  def events(self, n, skip_bookmarks=True):
    out = []
    deadline = time.monotonic() + _DEADLINE
    while len(out) < n:
      left = deadline - time.monotonic()
      if left <= 0:
        raise AssertionError("got %d of %d events: %r" % (len(out), n, out))
      try:
        event = self.queue.get(timeout=left)
      except queue.Empty:
        continue
      if skip_bookmarks and event["type"] == "BOOKMARK":
        continue
      out.append(event)
    return out


def _summary(events):
  return [(e["type"], e["object"]["metadata"].get("name")) for e in events]


class WatchTest(unittest.TestCase):
  """One emulator (short bookmark interval) for the class."""

  @classmethod
  def setUpClass(cls):
    cls.emu = Emulator("--bookmark-seconds", "0.3")
    cls.emu.start()
    cls.c = cls.emu.client

  @classmethod
  def tearDownClass(cls):
    cls.emu.__exit__(None, None, None)

  def test_events_in_order_with_field_selector(self):
    rv = self.c.list("resourceslices")["metadata"]["resourceVersion"]
    watch = Watch(self.c, "resourceslices", resource_version=rv,
                  field_selector="spec.nodeName=w-a")
    self.c.create("resourceslices", gpu_slice("w-b", name="w-b-0"))
    created = self.c.create("resourceslices", gpu_slice("w-a", name="w-a-0"))
    created["spec"]["pool"]["generation"] = 2
    updated = self.c.update("resourceslices", created)
    self.c.delete("resourceslices", "w-a-0")
    events = watch.events(3)
    self.assertEqual(_summary(events), [("ADDED", "w-a-0"),
                                        ("MODIFIED", "w-a-0"),
                                        ("DELETED", "w-a-0")])
    self.assertEqual(events[1]["object"], updated)
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    self.assertEqual(rvs, sorted(rvs))
    self.assertEqual(events[0]["object"]["kind"], "ResourceSlice")

  def test_from_zero_sends_current_objects_first(self):
    for i in range(2):
      self.c.create("resourceslices", gpu_slice("w-zero", name="w-zero-%d" % i))
    watch = Watch(self.c, "resourceslices", resource_version="0",
                  field_selector="spec.nodeName=w-zero")
    self.assertEqual(_summary(watch.events(2)), [("ADDED", "w-zero-0"),
                                                 ("ADDED", "w-zero-1")])
    self.c.delete("resourceslices", "w-zero-1")
    self.assertEqual(_summary(watch.events(1)), [("DELETED", "w-zero-1")])

  def test_label_selector_transitions(self):
    rv = self.c.list("nodes")["metadata"]["resourceVersion"]
    watch = Watch(self.c, "nodes", resource_version=rv,
                  label_selector="watched=yes")
    node = self.c.create("nodes", {"metadata": {"name": "w-node", "labels": {
        "watched": "yes"}}})
    node["metadata"]["labels"]["watched"] = "no"
    node = self.c.update("nodes", node)
    node["metadata"]["labels"]["watched"] = "yes"
    self.c.update("nodes", node)
    self.assertEqual(_summary(watch.events(3)), [("ADDED", "w-node"),
                                                 ("DELETED", "w-node"),
                                                 ("ADDED", "w-node")])

  def test_namespaced_claims(self):
    # Created before or after the watch starts, "mine" arrives as ADDED.
    watch = Watch(self.c, "resourceclaims", namespace="w-ns",
                  resource_version="0")
    self.c.create("resourceclaims", claim("other", "w-other"))
    self.c.create("resourceclaims", claim("mine", "w-ns"))
    self.assertEqual(_summary(watch.events(1)), [("ADDED", "mine")])

  def test_timeout_seconds_ends_stream(self):
    start = time.monotonic()
    watch = Watch(self.c, "deviceclasses", timeout=1)
    self.assertTrue(watch.ended.wait(_DEADLINE))
    self.assertGreaterEqual(time.monotonic() - start, 0.9)
    self.assertTrue(all(e["type"] != "EXCEPTION"
                        for e in list(watch.queue.queue)))

  def test_bookmarks(self):
    rv = self.c.list("deviceclasses")["metadata"]["resourceVersion"]
    watch = Watch(self.c, "deviceclasses", resource_version=rv,
                  bookmarks=True)
    event = watch.events(1, skip_bookmarks=False)[0]
    self.assertEqual(event["type"], "BOOKMARK")
    self.assertEqual(event["object"]["kind"], "DeviceClass")
    self.assertGreaterEqual(int(event["object"]["metadata"]
                                ["resourceVersion"]), int(rv))

  def test_close_watches(self):
    self.c.create("nodes", {"metadata": {"name": "w-close"}})
    watch = Watch(self.c, "nodes", resource_version="0",
                  field_selector="metadata.name=w-close")
    self.assertEqual(_summary(watch.events(1)), [("ADDED", "w-close")])
    self.emu.control("POST", "close-watches", {})
    self.assertTrue(watch.ended.wait(_DEADLINE))


class WatchHistoryTest(unittest.TestCase):
  """410 Gone for resourceVersions older than the kept history."""

  def test_too_old_resource_version(self):
    with Emulator("--history", "5") as emu:
      rvs = [emu.client.create("nodes", {"metadata": {"name": "h-%d" % i}})[
          "metadata"]["resourceVersion"] for i in range(10)]
      watch = Watch(emu.client, "nodes", resource_version=rvs[0])
      event = watch.events(1)[0]
      self.assertEqual(event["type"], "ERROR")
      self.assertEqual((event["object"]["code"], event["object"]["reason"]),
                       (410, "Expired"))
      self.assertTrue(watch.ended.wait(_DEADLINE))
      # The kept events are still served.
      recent = Watch(emu.client, "nodes", resource_version=rvs[4])
      self.assertEqual(_summary(recent.events(5)),
                       [("ADDED", "h-%d" % i) for i in range(5, 10)])

  def test_compact(self):
    with Emulator() as emu:
      rv = emu.client.create("nodes", {"metadata": {"name": "c-0"}})[
          "metadata"]["resourceVersion"]
      emu.client.create("nodes", {"metadata": {"name": "c-1"}})
      emu.control("POST", "compact")
      event = Watch(emu.client, "nodes", resource_version=rv).events(1)[0]
      self.assertEqual((event["type"], event["object"]["code"]),
                       ("ERROR", 410))


if __name__ == "__main__":
  unittest.main()
