#include "dra/slice_json.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace gdp::dra {
namespace {

using nlohmann::json;

constexpr char kApiVersion[] = "resource.k8s.io/v1";
// The API server cuts a generateName to 63 - 5 characters before it adds
// 5 random ones.
constexpr size_t kMaxGenerateName = 58;

json AttributeJson(const AttributeValue& v) {
  switch (v.kind) {
    case AttributeValue::Kind::kInt:
      return {{"int", v.int_value}};
    case AttributeValue::Kind::kBool:
      return {{"bool", v.bool_value}};
    case AttributeValue::Kind::kString:
      return {{"string", v.text}};
    case AttributeValue::Kind::kVersion:
      return {{"version", v.text}};
  }
  return json::object();
}

// Our value of a published attribute, or nullopt when it is not exactly one
// kind we publish.
std::optional<AttributeValue> ParseAttribute(const json& j) {
  if (!j.is_object() || j.size() != 1) return std::nullopt;
  const auto it = j.begin();
  const std::string& kind = it.key();
  const json& value = it.value();
  if (kind == "int" && value.is_number_integer()) {
    return AttributeValue::Int(value.get<int64_t>());
  }
  if (kind == "bool" && value.is_boolean()) {
    return AttributeValue::Bool(value.get<bool>());
  }
  if (kind == "string" && value.is_string()) {
    return AttributeValue::String(value.get<std::string>());
  }
  if (kind == "version" && value.is_string()) {
    return AttributeValue::Version(value.get<std::string>());
  }
  return std::nullopt;
}

std::string StringAt(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t IntAt(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// The whole quantity at j[key]; nullopt if missing or not one.
std::optional<uint64_t> QuantityAt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return ParseWholeQuantity(it->get<std::string>());
}

json PolicyJson(const RequestPolicy& p) {
  return {{"default", CanonicalQuantity(p.default_value)},
          {"validRange",
           {{"min", CanonicalQuantity(p.min)},
            {"max", CanonicalQuantity(p.max)},
            {"step", CanonicalQuantity(p.step)}}}};
}

// A requestPolicy of the form we publish (default and a validRange with
// min, max and step), or nullopt.
std::optional<RequestPolicy> ParsePolicy(const json& j) {
  if (!j.is_object() || j.size() != 2) return std::nullopt;
  auto range = j.find("validRange");
  if (range == j.end() || !range->is_object() || range->size() != 3) {
    return std::nullopt;
  }
  std::optional<uint64_t> def = QuantityAt(j, "default");
  std::optional<uint64_t> min = QuantityAt(*range, "min");
  std::optional<uint64_t> max = QuantityAt(*range, "max");
  std::optional<uint64_t> step = QuantityAt(*range, "step");
  if (!def || !min || !max || !step) return std::nullopt;
  return RequestPolicy{
      .default_value = *def, .min = *min, .max = *max, .step = *step};
}

// {"<name>": {"value": "<quantity>"}, ...}: counters as the API writes them.
json CountersJson(const std::map<std::string, uint64_t>& counters) {
  json out = json::object();
  for (const auto& [name, value] : counters) {
    out[name] = {{"value", CanonicalQuantity(value)}};
  }
  return out;
}

// Counters as CountersJson writes them; nullopt if any is not one.
std::optional<std::map<std::string, uint64_t>> ParseCounters(const json& j) {
  if (!j.is_object()) return std::nullopt;
  std::map<std::string, uint64_t> out;
  for (const auto& [name, value] : j.items()) {
    if (!value.is_object() || value.size() != 1) return std::nullopt;
    std::optional<uint64_t> n = QuantityAt(value, "value");
    if (!n.has_value()) return std::nullopt;
    out[name] = *n;
  }
  return out;
}

// A counter set or consumption with `name_key` ("name", "counterSet") and
// counters, and nothing else; nullopt otherwise.
std::optional<std::pair<std::string, std::map<std::string, uint64_t>>>
ParseNamedCounters(const json& j, const char* name_key) {
  if (!j.is_object() || j.size() != 2) return std::nullopt;
  auto name = j.find(name_key);
  auto counters = j.find("counters");
  if (name == j.end() || !name->is_string() || counters == j.end()) {
    return std::nullopt;
  }
  std::optional<std::map<std::string, uint64_t>> c = ParseCounters(*counters);
  if (!c.has_value()) return std::nullopt;
  return std::make_pair(name->get<std::string>(), *std::move(c));
}

// A device that cannot match anything we publish (its name keeps it
// apart in messages).
SliceDevice Unreadable(const std::string& name) {
  SliceDevice d;
  d.name = name;
  d.attributes["\x01unreadable"] = AttributeValue::Bool(true);
  return d;
}

SliceDevice ParseDevice(const json& j, TaintTimes* times) {
  const std::string name = StringAt(j, "name");
  SliceDevice d;
  d.name = name;
  if (auto a = j.find("attributes"); a != j.end() && a->is_object()) {
    for (const auto& [key, value] : a->items()) {
      std::optional<AttributeValue> v = ParseAttribute(value);
      if (!v.has_value()) return Unreadable(name);
      d.attributes[key] = *std::move(v);
    }
  }
  if (auto c = j.find("capacity"); c != j.end() && c->is_object()) {
    for (const auto& [key, value] : c->items()) {
      if (!value.is_object()) return Unreadable(name);
      std::optional<uint64_t> n = QuantityAt(value, "value");
      if (!n.has_value()) return Unreadable(name);
      d.capacity[key] = *n;
      size_t fields = 1;
      if (auto p = value.find("requestPolicy"); p != value.end()) {
        std::optional<RequestPolicy> policy = ParsePolicy(*p);
        if (!policy.has_value()) return Unreadable(name);
        d.request_policies[key] = *policy;
        ++fields;
      }
      if (value.size() != fields) return Unreadable(name);
    }
  }
  if (auto m = j.find("allowMultipleAllocations"); m != j.end()) {
    // false is the same as absent, and what the API server may store.
    if (!m->is_boolean()) return Unreadable(name);
    d.allow_multiple_allocations = m->get<bool>();
  }
  if (auto c = j.find("consumesCounters"); c != j.end()) {
    if (!c->is_array()) return Unreadable(name);
    for (const json& consumption : *c) {
      auto parsed = ParseNamedCounters(consumption, "counterSet");
      if (!parsed.has_value()) return Unreadable(name);
      d.consumes_counters.push_back(
          {std::move(parsed->first), std::move(parsed->second)});
    }
  }
  if (auto t = j.find("taints"); t != j.end() && t->is_array()) {
    for (const json& taint : *t) {
      if (!taint.is_object()) return Unreadable(name);
      Taint x{StringAt(taint, "key"), StringAt(taint, "value"),
              StringAt(taint, "effect")};
      if (std::string added = StringAt(taint, "timeAdded"); !added.empty()) {
        (*times)[{name, x.key, x.value, x.effect}] = added;
      }
      d.taints.push_back(std::move(x));
    }
  }
  // Fields we never publish (bindsToNode, ...) make it differ.
  for (const auto& [key, unused] : j.items()) {
    if (key != "name" && key != "attributes" && key != "capacity" &&
        key != "taints" && key != "allowMultipleAllocations" &&
        key != "consumesCounters") {
      return Unreadable(name);
    }
  }
  return d;
}

}  // namespace

json SliceJson(const SliceObject& s, const NodeOwner& owner,
               const TaintTimes& times) {
  json metadata = json::object();
  if (s.name.empty()) {
    metadata["generateName"] = absl::StrCat(s.node_name, "-", s.driver, "-")
                                   .substr(0, kMaxGenerateName);
  } else {
    metadata["name"] = s.name;
  }
  if (!s.resource_version.empty()) {
    metadata["resourceVersion"] = s.resource_version;
  }
  metadata["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                              {"kind", "Node"},
                                              {"name", owner.name},
                                              {"uid", owner.uid},
                                              {"controller", true}}});
  json devices = json::array();
  for (const SliceDevice& d : s.devices) {
    json device = {{"name", d.name}};
    if (!d.attributes.empty()) {
      json attributes = json::object();
      for (const auto& [key, value] : d.attributes) {
        attributes[key] = AttributeJson(value);
      }
      device["attributes"] = std::move(attributes);
    }
    if (!d.capacity.empty()) {
      json capacity = json::object();
      for (const auto& [key, value] : d.capacity) {
        json c = {{"value", CanonicalQuantity(value)}};
        if (auto p = d.request_policies.find(key);
            p != d.request_policies.end()) {
          c["requestPolicy"] = PolicyJson(p->second);
        }
        capacity[key] = std::move(c);
      }
      device["capacity"] = std::move(capacity);
    }
    if (!d.consumes_counters.empty()) {
      json consumes = json::array();
      for (const CounterConsumption& c : d.consumes_counters) {
        consumes.push_back({{"counterSet", c.counter_set},
                            {"counters", CountersJson(c.counters)}});
      }
      device["consumesCounters"] = std::move(consumes);
    }
    if (d.allow_multiple_allocations) device["allowMultipleAllocations"] = true;
    if (!d.taints.empty()) {
      json taints = json::array();
      for (const Taint& t : d.taints) {
        json taint = {{"key", t.key}, {"effect", t.effect}};
        if (!t.value.empty()) taint["value"] = t.value;
        if (auto it = times.find({d.name, t.key, t.value, t.effect});
            it != times.end()) {
          taint["timeAdded"] = it->second;
        }
        taints.push_back(std::move(taint));
      }
      device["taints"] = std::move(taints);
    }
    devices.push_back(std::move(device));
  }
  json spec = {{"driver", s.driver},
               {"pool",
                {{"name", s.node_name},
                 {"generation", s.generation},
                 {"resourceSliceCount", s.slice_count}}},
               {"nodeName", s.node_name}};
  if (s.counter_sets.empty()) {
    spec["devices"] = std::move(devices);
  } else {
    json sets = json::array();
    for (const CounterSet& c : s.counter_sets) {
      sets.push_back(
          {{"name", c.name}, {"counters", CountersJson(c.counters)}});
    }
    spec["sharedCounters"] = std::move(sets);
  }
  return {{"apiVersion", kApiVersion},
          {"kind", "ResourceSlice"},
          {"metadata", std::move(metadata)},
          {"spec", std::move(spec)}};
}

absl::StatusOr<PublishedSlice> ParseSlice(const json& object) {
  if (!object.is_object() || !object.contains("metadata") ||
      !object["metadata"].is_object()) {
    return absl::InvalidArgumentError("ResourceSlice without metadata");
  }
  const json& metadata = object["metadata"];
  PublishedSlice s;
  s.name = StringAt(metadata, "name");
  s.resource_version = StringAt(metadata, "resourceVersion");
  if (s.name.empty()) {
    return absl::InvalidArgumentError("ResourceSlice without metadata.name");
  }
  auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ResourceSlice ", s.name, " has no spec"));
  }
  s.driver = StringAt(*spec, "driver");
  s.node_name = StringAt(*spec, "nodeName");
  if (auto pool = spec->find("pool");
      pool != spec->end() && pool->is_object()) {
    s.pool = StringAt(*pool, "name");
    s.generation = IntAt(*pool, "generation");
    s.slice_count = IntAt(*pool, "resourceSliceCount");
  }
  if (auto devices = spec->find("devices");
      devices != spec->end() && devices->is_array()) {
    for (const json& d : *devices) {
      if (!d.is_object()) {
        s.devices.push_back(Unreadable(""));
        continue;
      }
      s.devices.push_back(ParseDevice(d, &s.taint_times));
    }
  }
  if (auto sets = spec->find("sharedCounters"); sets != spec->end()) {
    if (!sets->is_array()) {
      // Matches nothing we publish: rewritten.
      s.counter_sets.push_back({"\x01unreadable", {}});
    } else {
      for (const json& c : *sets) {
        auto parsed = ParseNamedCounters(c, "name");
        if (!parsed.has_value()) {
          s.counter_sets.push_back({"\x01unreadable", {}});
          continue;
        }
        s.counter_sets.push_back(
            {std::move(parsed->first), std::move(parsed->second)});
      }
    }
  }
  return s;
}

std::string LastManager(const json& object, const std::string& ours) {
  // The API server's limit on a field manager's name.
  constexpr size_t kMaxManager = 128;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto fields = meta->find("managedFields");
  if (fields == meta->end() || !fields->is_array()) return "";
  std::string best, best_time;
  for (const json& entry : *fields) {
    if (!entry.is_object()) continue;
    auto manager = entry.find("manager");
    auto time = entry.find("time");
    if (manager == entry.end() || !manager->is_string()) continue;
    std::string name = manager->get<std::string>().substr(0, kMaxManager);
    std::string when = time != entry.end() && time->is_string()
                           ? time->get<std::string>()
                           : std::string();
    const bool later = best.empty() || when > best_time;
    const bool tie_not_ours = when == best_time && best == ours && name != ours;
    if (later || tie_not_ours) {
      best = std::move(name);
      best_time = std::move(when);
    }
  }
  return best;
}

}  // namespace gdp::dra
