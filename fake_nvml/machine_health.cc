// The health fields of a GPU entry (ParseGpuHealth, machine_parse.h).
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "fake_nvml/machine_parse.h"
#include "fake_nvml/yaml_reader.h"

namespace gdp::fake_nvml {
namespace {

constexpr uint64_t kMaxRows = 0xFFFFFFFF;

RemappedRows ParseRemappedRows(const YAML::Node& node,
                               const std::string& path) {
  YamlMap map(node, path);
  RemappedRows rows;
  if (auto n = map.Optional("corrected")) {
    rows.corrected = ParseUint(*n, map.FieldPath("corrected"), kMaxRows);
  }
  if (auto n = map.Optional("uncorrectable")) {
    rows.uncorrectable =
        ParseUint(*n, map.FieldPath("uncorrectable"), kMaxRows);
  }
  if (auto n = map.Optional("pending")) {
    rows.pending = ParseBool(*n, map.FieldPath("pending"));
  }
  if (auto n = map.Optional("failure")) {
    rows.failure = ParseBool(*n, map.FieldPath("failure"));
  }
  map.Finish();
  return rows;
}

bool IsPcieWidth(uint64_t width) {
  return width == 1 || width == 2 || width == 4 || width == 8 || width == 16 ||
         width == 32;
}

PcieLink ParsePcie(const YAML::Node& node, const std::string& path,
                   PcieLink link) {
  YamlMap map(node, path);
  auto gen = [&](const char* key, unsigned* out) {
    if (auto n = map.Optional(key)) {
      const uint64_t v = ParseUint(*n, map.FieldPath(key), 6);
      if (v == 0) {
        throw FieldError(LineOf(*n), map.FieldPath(key),
                         "a PCIe generation is 1 to 6");
      }
      *out = static_cast<unsigned>(v);
    }
  };
  auto width = [&](const char* key, unsigned* out) {
    if (auto n = map.Optional(key)) {
      const uint64_t v = ParseUint(*n, map.FieldPath(key), 32);
      if (!IsPcieWidth(v)) {
        throw FieldError(LineOf(*n), map.FieldPath(key),
                         "a PCIe link width is 1, 2, 4, 8, 16 or 32 lanes");
      }
      *out = static_cast<unsigned>(v);
    }
  };
  gen("max_gen", &link.max_gen);
  link.gen = link.max_gen;
  gen("gen", &link.gen);
  width("max_width", &link.max_width);
  link.width = link.max_width;
  width("width", &link.width);
  if (link.gen > link.max_gen) {
    throw FieldError(map.line(), map.FieldPath("gen"),
                     absl::StrCat("generation ", link.gen, " is above max_gen ",
                                  link.max_gen));
  }
  if (link.width > link.max_width) {
    throw FieldError(map.line(), map.FieldPath("width"),
                     absl::StrCat("width ", link.width, " is above max_width ",
                                  link.max_width));
  }
  map.Finish();
  return link;
}

}  // namespace

void ParseGpuHealth(YamlMap& map, Gpu* gpu) {
  const bool remaps = RemapsRows(gpu->architecture);
  if (remaps) gpu->remapped_rows = RemappedRows{};
  if (auto rows = map.Optional("remapped_rows")) {
    if (!remaps) {
      throw FieldError(LineOf(*rows), map.FieldPath("remapped_rows"),
                       "row remapping needs an Ampere or later GPU (this "
                       "one retires pages: use retired_pages_pending)");
    }
    gpu->remapped_rows =
        ParseRemappedRows(*rows, map.FieldPath("remapped_rows"));
  }
  if (auto pending = map.Optional("retired_pages_pending")) {
    if (remaps) {
      throw FieldError(LineOf(*pending), map.FieldPath("retired_pages_pending"),
                       "Ampere and later GPUs remap rows instead of retiring "
                       "pages: use remapped_rows");
    }
    gpu->retired_pages_pending =
        ParseBool(*pending, map.FieldPath("retired_pages_pending"));
  }
  PcieLink link;
  link.gen = link.max_gen = DefaultPcieGeneration(gpu->architecture);
  link.width = link.max_width = 16;
  gpu->pcie = link;
  if (auto pcie = map.Optional("pcie")) {
    gpu->pcie = ParsePcie(*pcie, map.FieldPath("pcie"), link);
  }
  if (auto reasons = map.Optional("throttle_reasons")) {
    const uint64_t mask =
        ParseUint(*reasons, map.FieldPath("throttle_reasons"), UINT64_MAX);
    if ((mask & ~uint64_t{nvmlClocksThrottleReasonAll}) != 0) {
      throw FieldError(
          LineOf(*reasons), map.FieldPath("throttle_reasons"),
          absl::StrCat("bits outside the nvmlClocksThrottleReason* mask 0x",
                       absl::Hex(nvmlClocksThrottleReasonAll)));
    }
    gpu->throttle_reasons = mask;
  }
}

}  // namespace gdp::fake_nvml
