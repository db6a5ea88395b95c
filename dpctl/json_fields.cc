#include "json_fields.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gdp::dpctl {

Json EventJson(absl::string_view event, const char* key,
               absl::string_view value, const Json& fields) {
  Json j = {{"event", std::string(event)}};
  if (!value.empty()) j[key] = std::string(value);
  j.update(fields);
  return j;
}

std::string EventHead(const Json& event) {
  std::string head = JsonStr(event, "event");
  for (const char* key : {"resource", "driver"}) {
    const std::string name = JsonStr(event, key);
    if (!name.empty()) absl::StrAppend(&head, " ", name);
  }
  return head;
}

std::string JsonStr(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

const Json& JsonField(const Json& object, const char* key) {
  static const Json* const kNull = new Json();
  auto it = object.find(key);
  return it == object.end() ? *kNull : *it;
}

std::string JsonList(const Json& array) {
  std::vector<std::string> items;
  for (const Json& item : array) {
    items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
  }
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

}  // namespace gdp::dpctl
