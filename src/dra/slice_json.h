// The JSON edge of ResourceSlices (resource.k8s.io/v1): our slice model to
// the object the API server stores, and a published object back. Nothing
// else in the DRA side sees Kubernetes JSON for slices.
#ifndef GDP_DRA_SLICE_JSON_H_
#define GDP_DRA_SLICE_JSON_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/quantity.h"
#include "dra/slices.h"

namespace gdp::dra {

// One slice of this node's pool as the publisher wants it.
struct SliceObject {
  std::string name;              // empty: a new slice (generateName)
  std::string resource_version;  // of the published object it replaces
  std::string driver;
  std::string node_name;  // also the pool's name
  int64_t generation = 0;
  int64_t slice_count = 1;
  // One of the two (a slice of counters has no devices field at all).
  std::vector<SliceDevice> devices;
  std::vector<CounterSet> counter_sets;
};

// The Node that owns our slices (garbage collection when it is deleted).
struct NodeOwner {
  std::string name;
  std::string uid;
};

// When each taint was added, by (device, key, value, effect): carried over
// from the published slices so republishing does not move it.
using TaintTimes =
    std::map<std::tuple<std::string, std::string, std::string, std::string>,
             std::string>;

// The ResourceSlice object for `s`: metadata.name (or generateName
// "<node>-<driver>-", cut to the 58 characters the API server keeps),
// resourceVersion when set, an ownerReference to `owner`; spec.driver,
// spec.pool {name = node, generation, resourceSliceCount}, spec.nodeName and
// either spec.sharedCounters (when `s` has counter sets) or spec.devices
// with attributes, capacity (canonical quantities), consumesCounters and
// taints (timeAdded from `times` where known, else left to the API
// server).
nlohmann::json SliceJson(const SliceObject& s, const NodeOwner& owner,
                         const TaintTimes& times);

// A ResourceSlice read from the API server.
struct PublishedSlice {
  std::string name;
  std::string resource_version;
  std::string driver;
  std::string node_name;
  std::string pool;
  int64_t generation = 0;
  int64_t slice_count = 0;
  std::vector<SliceDevice> devices;
  std::vector<CounterSet> counter_sets;  // spec.sharedCounters
  TaintTimes taint_times;
};

// Reads what the publisher compares from a ResourceSlice object; fields it
// does not know are ignored. A device, capacity, counter set or counter it
// cannot read (a value of a kind we never publish) makes the slice differ
// from anything we would publish, so it is rewritten.
// Result on failure: InvalidArgument naming what is missing (metadata.name,
// spec), for objects that are not slices at all.
absl::StatusOr<PublishedSlice> ParseSlice(const nlohmann::json& object);

// Who wrote `object` last, as the API server recorded it: the manager of its
// metadata.managedFields entry with the latest time (RFC 3339, whole
// seconds); among entries of that time, one other than `ours` when there is
// one. Cut to the API's 128 characters. "" when there are no entries.
std::string LastManager(const nlohmann::json& object, const std::string& ours);

}  // namespace gdp::dra

#endif  // GDP_DRA_SLICE_JSON_H_
