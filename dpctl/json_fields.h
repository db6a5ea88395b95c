// The JSON type of dpctl's event objects (events.h, dra_events.h), building
// their fields, and reading them for their text forms without throwing on a
// missing field.
#ifndef GDP_DPCTL_JSON_FIELDS_H_
#define GDP_DPCTL_JSON_FIELDS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gdp::dpctl {

// Keeps fields in insertion order, so "event" comes first in every line.
using Json = nlohmann::ordered_json;

// Every event object: {"event":<event>}, then "<key>":<value> when `value`
// is not empty, then the fields of `fields` (an object) in their order.
Json EventJson(absl::string_view event, const char* key,
               absl::string_view value, const Json& fields);

// A JSON array of the strings in `items` (any range whose items convert to
// std::string), in order.
template <typename Strings>
Json JsonStrings(const Strings& items) {
  Json list = Json::array();
  for (const auto& item : items) list.push_back(std::string(item));
  return list;
}

// "<event>", or "<event> <name>" where <name> is the event's "resource"
// or "driver": how the text form of most events starts.
std::string EventHead(const Json& event);

// The field `key` of `object` as text: a string as is, another value as
// its JSON; "" when missing.
std::string JsonStr(const Json& object, const char* key);

// The field `key`, or null when it is missing (const operator[] would be
// undefined behaviour then).
const Json& JsonField(const Json& object, const char* key);

// "[a, b]": the items of `array`, strings as is, others as JSON.
std::string JsonList(const Json& array);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_JSON_FIELDS_H_
