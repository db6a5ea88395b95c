// Kubernetes quantities ("80Gi", "1536", "2k") for whole numbers: the form
// the API server stores, and reading them back. Pure.
#ifndef GDP_DRA_QUANTITY_H_
#define GDP_DRA_QUANTITY_H_

#include <cstdint>
#include <optional>
#include <string>

namespace gdp::dra {

// A quantity in Kubernetes' canonical form for a whole number of bytes or
// things (BinarySI): "80Gi", "1536", "7", "1k" (below 1024 the decimal
// form is canonical).
std::string CanonicalQuantity(uint64_t value);

// A whole, non-negative quantity ("80Gi", "1536", "2k", "1e3") as a number;
// nullopt when it is not one (a fraction, a sign, an unknown suffix) or
// does not fit 64 bits.
std::optional<uint64_t> ParseWholeQuantity(const std::string& text);

}  // namespace gdp::dra

#endif  // GDP_DRA_QUANTITY_H_
