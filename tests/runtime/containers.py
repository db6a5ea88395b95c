"""Workload containers made from an Allocate answer, as the kubelet and a
CRI runtime make them, and what such a container reports about its GPUs.

The answer (the `response` of a `dpctl kubelet --json` allocate event)
becomes podman flags: each device spec a --device HOST:CONTAINER:PERMS,
each env an --env, each mount a --volume, each CDI device name a --device
NAME (podman resolves it through its own CDI support), each annotation an
--annotation, and the CDI device names in annotations under the CDI prefix
a --device NAME each (what a runtime does with cdi.k8s.io/ annotations).
"""

import fixture
import podman

CDI_ANNOTATION_PREFIX = "cdi.k8s.io/"

# Run in the container (sh -c REPORT_SCRIPT sh MAJOR:MINOR...): one line
# per device node (and per volume-mounts entry), with what opening it
# says; then NVIDIA_VISIBLE_DEVICES and whether NVML was mounted; then, for
# each MAJOR:MINOR argument, what opening a node with those numbers made in
# the container says. With no driver behind the numbers, opening a node the
# device cgroup allows fails with ENXIO ("No such device or address"), one
# it denies with EPERM ("Operation not permitted").
REPORT_SCRIPT = r"""
opened() { (: <"$1") 2>&1 | sed 's/.*: //'; }
for f in /dev/nvidia* /dev/nvidia-caps/* /var/run/nvidia-container-devices/*
do
  [ -e "$f" ] || continue
  [ -d "$f" ] && continue
  stat -c 'node|%n|%F|%t|%T' "$f"
  [ -c "$f" ] && echo "open|$f|$(opened "$f")"
done
echo "env|${NVIDIA_VISIBLE_DEVICES-(unset)}"
if [ -f /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 ]; then echo "nvml|yes"
else echo "nvml|no"; fi
for n in "$@"; do
  p=/tmp/probe-${n%:*}-${n#*:}
  if mknod "$p" c "${n%:*}" "${n#*:}" 2>/dev/null; then
    echo "probe|$n|$(opened "$p")"
  else
    echo "probe|$n|cannot mknod"
  fi
done
"""
NO_DRIVER = "No such device or address"  # ENXIO: the cgroup allowed it
DENIED = "Operation not permitted"  # EPERM: the device cgroup denied it


def podman_flags(response):
  """(flags, CDI device names) for the container of an Allocate answer."""
  flags = []
  cdi = []
  for d in response.get("devices", []):
    flags += ["--device", "%s:%s:%s" % (d["host_path"], d["container_path"],
                                        d["permissions"])]
  for key, value in sorted(response.get("envs", {}).items()):
    flags += ["--env", "%s=%s" % (key, value)]
  for m in response.get("mounts", []):
    flags += ["--volume", "%s:%s%s" % (m["host_path"], m["container_path"],
                                       ":ro" if m.get("read_only") else "")]
  cdi += response.get("cdi_devices", [])
  for key, value in sorted(response.get("annotations", {}).items()):
    flags += ["--annotation", "%s=%s" % (key, value)]
    if key.startswith(CDI_ANNOTATION_PREFIX):
      cdi += value.split(",")
  for name in cdi:
    flags += ["--device", name]
  return flags, cdi


def command(name, flags, cdi_dir, tail):
  """`podman run` of the base image with `flags`, then `tail` (options and
  the command); in a CDI namespace over cdi_dir when given."""
  args = ["run"] + podman.run_args(name) + flags + tail
  if cdi_dir is not None:
    return podman.cdi_command(cdi_dir, args)
  return [podman.PODMAN] + args


class Report:
  """What the report script printed: nodes {path: (type, major, minor)},
  opens {path: what opening it said} for character devices, the
  NVIDIA_VISIBLE_DEVICES value, whether NVML is mounted, and probes
  {"MAJOR:MINOR": what opening such a node said}."""

  def __init__(self, text):
    self.text = text
    self.nodes = {}
    self.opens = {}
    self.probes = {}
    self.env = None
    self.nvml = None
    for line in text.splitlines():
      parts = line.split("|")
      if parts[0] == "node" and len(parts) == 5:
        self.nodes[parts[1]] = (parts[2], int(parts[3], 16),
                                int(parts[4], 16))
      elif parts[0] == "open" and len(parts) == 3:
        self.opens[parts[1]] = parts[2]
      elif parts[0] == "probe" and len(parts) == 3:
        self.probes[parts[1]] = parts[2]
      elif parts[0] == "env":
        self.env = parts[1]
      elif parts[0] == "nvml":
        self.nvml = parts[1] == "yes"


def char(major, minor):
  return ("character special file", major, minor)


def expected_nodes(gpu_minors, caps=(), volume_units=()):
  """The nodes a container given GPUs with these minors must see, and
  nothing else: the control nodes, /dev/nvidia<minor>, MIG capability
  nodes nvidia-cap<N>, and volume-mounts entries (/dev/null) per unit."""
  nodes = {path: char(*numbers)
           for path, numbers in fixture.CONTROL_NODES.items()}
  for minor in gpu_minors:
    nodes["/dev/nvidia%d" % minor] = char(fixture.NVIDIA_MAJOR, minor)
  for n in caps:
    nodes["/dev/nvidia-caps/nvidia-cap%d" % n] = char(fixture.CAPS_MAJOR, n)
  for unit in volume_units:
    nodes["%s/%s" % (fixture.VOLUME_MOUNTS_ROOT, unit)] = char(1, 3)
  return nodes


def main(argv):
  """containers.py ANSWER_FILE [--cdi-dir DIR] -- COMMAND...: runs COMMAND
  in a container of the base image made from the last allocate event in
  ANSWER_FILE (`dpctl kubelet --json` output), as the tests do; exits with
  podman's exit code. For the demo."""
  import argparse  # pylint: disable=import-outside-toplevel
  import json  # pylint: disable=import-outside-toplevel
  import os  # pylint: disable=import-outside-toplevel
  parser = argparse.ArgumentParser(description=main.__doc__)
  parser.add_argument("answer_file")
  parser.add_argument("--cdi-dir")
  parser.add_argument("command", nargs="+")
  opts = parser.parse_args(argv)
  answer = None
  with open(opts.answer_file, encoding="utf-8") as f:
    for line in f:
      try:
        event = json.loads(line)
      except ValueError:
        continue
      if isinstance(event, dict) and event.get("event") == "allocate":
        answer = event
  if answer is None:
    print("no allocate event in %s" % opts.answer_file)
    return 2
  flags, _ = podman_flags(answer["response"])
  cmd = command(podman.container_name("demo"), flags, opts.cdi_dir,
                ["--rm", podman.BASE_IMAGE] + opts.command)
  os.execvp(cmd[0], cmd)
  return 127


if __name__ == "__main__":
  import sys  # pylint: disable=import-outside-toplevel
  sys.exit(main(sys.argv[1:]))
