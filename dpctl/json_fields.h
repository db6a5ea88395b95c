// Reading fields of event objects for their text forms, without throwing
// on a missing field.
#ifndef GDP_DPCTL_JSON_FIELDS_H_
#define GDP_DPCTL_JSON_FIELDS_H_

#include <string>

#include "events.h"

namespace gdp::dpctl {

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
