#include "fake_nvml/mig_profiles.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gdp::fake_nvml {
namespace {

// Valid placement starts (bit s: memory slice s), per profile shape.
constexpr uint8_t kStartsOneSlice = 0x7F;    // 0-6
constexpr uint8_t kStartsTwoMemory = 0x55;   // 0, 2, 4, 6
constexpr uint8_t kStartsTwoSlices = 0x15;   // 0, 2, 4
constexpr uint8_t kStartsFourMemory = 0x11;  // 0, 4
constexpr uint8_t kStartsWhole = 0x01;       // 0

// The profile rows of one product family. Columns: query index, profile ID,
// name, compute slices, memory slices, instances, SMs, copy engines,
// decoders, encoders, JPEG, OFA, memory MiB, placements.
constexpr GiProfile kA100Profiles40Gb[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.5gb", 1, 1, 7, 14, 1, 0, 0, 0,
     0, 4864, kStartsOneSlice},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.5gb+me", 1, 1, 1, 14, 1, 1,
     0, 1, 1, 4864, kStartsOneSlice},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, "1g.10gb", 1, 2, 4, 14, 1, 1,
     0, 0, 0, 9856, kStartsTwoMemory},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, "2g.10gb", 2, 2, 3, 28, 2, 1, 0, 0,
     0, 9856, kStartsTwoSlices},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, "3g.20gb", 3, 4, 2, 42, 3, 2, 0, 0,
     0, 19968, kStartsFourMemory},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, "4g.20gb", 4, 4, 1, 56, 4, 2, 0, 0,
     0, 19968, kStartsWhole},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, "7g.40gb", 7, 8, 1, 98, 7, 5, 0, 1,
     1, 40192, kStartsWhole},
};

constexpr GiProfile kA100Profiles80Gb[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.10gb", 1, 1, 7, 14, 1, 0, 0, 0,
     0, 9728, kStartsOneSlice},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.10gb+me", 1, 1, 1, 14, 1,
     1, 0, 1, 1, 9728, kStartsOneSlice},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, "1g.20gb", 1, 2, 4, 14, 1, 1,
     0, 0, 0, 19968, kStartsTwoMemory},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, "2g.20gb", 2, 2, 3, 28, 2, 1, 0, 0,
     0, 19968, kStartsTwoSlices},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, "3g.40gb", 3, 4, 2, 42, 3, 2, 0, 0,
     0, 40192, kStartsFourMemory},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, "4g.40gb", 4, 4, 1, 56, 4, 2, 0, 0,
     0, 40192, kStartsWhole},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, "7g.80gb", 7, 8, 1, 98, 7, 5, 0, 1,
     1, 80896, kStartsWhole},
};

// H100 80GB: SXM5 (HBM3) and PCIe differ only in SM counts.
constexpr std::array<GiProfile, 7> H100Profiles(
    const std::array<unsigned, 7>& sms) {
  return {{
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.10gb", 1, 1, 7, sms[0], 1, 1,
       0, 1, 0, 9984, kStartsOneSlice},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.10gb+me", 1, 1, 1,
       sms[1], 1, 1, 0, 1, 1, 9984, kStartsOneSlice},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, "1g.20gb", 1, 2, 4, sms[2],
       1, 1, 0, 1, 0, 20096, kStartsTwoMemory},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, "2g.20gb", 2, 2, 3, sms[3], 2, 2,
       0, 2, 0, 20096, kStartsTwoSlices},
      {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, "3g.40gb", 3, 4, 2, sms[4], 3, 3,
       0, 3, 0, 40448, kStartsFourMemory},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, "4g.40gb", 4, 4, 1, sms[5], 4, 4,
       0, 4, 0, 40448, kStartsWhole},
      {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, "7g.80gb", 7, 8, 1, sms[6], 8, 7,
       0, 7, 1, 81152, kStartsWhole},
  }};
}

constexpr std::array<GiProfile, 7> kH100SxmProfiles =
    H100Profiles({16, 16, 26, 32, 60, 64, 132});
constexpr std::array<GiProfile, 7> kH100PcieProfiles =
    H100Profiles({14, 14, 14, 30, 46, 62, 114});

constexpr const char* kA100Names40Gb[] = {"NVIDIA A100-SXM4-40GB",
                                          "NVIDIA A100-PCIE-40GB"};
constexpr const char* kA100Names80Gb[] = {"NVIDIA A100-SXM4-80GB",
                                          "NVIDIA A100 80GB PCIe"};
constexpr const char* kH100SxmNames[] = {"NVIDIA H100 80GB HBM3"};
constexpr const char* kH100PcieNames[] = {"NVIDIA H100 PCIe"};

constexpr MigProduct kProducts[] = {
    {kA100Names40Gb, kA100Profiles40Gb},
    {kA100Names80Gb, kA100Profiles80Gb},
    {kH100SxmNames, kH100SxmProfiles},
    {kH100PcieNames, kH100PcieProfiles},
};

// The compute slice counts a compute instance profile may have, indexed by
// NVML_COMPUTE_INSTANCE_PROFILE_*; 0 for profiles the fake does not offer.
constexpr unsigned kCiSlices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {
    1, 2, 3, 4, 7, 0, 0, 0, 0};

// 64-bit FNV-1a of `text`, starting from `basis`.
uint64_t Fnv1a(absl::string_view text, uint64_t basis) {
  uint64_t hash = basis;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

}  // namespace

const MigProduct* FindMigProduct(absl::string_view gpu_name) {
  for (const MigProduct& product : kProducts) {
    for (const char* name : product.names) {
      if (name == gpu_name) return &product;
    }
  }
  return nullptr;
}

std::string KnownMigProducts() {
  std::vector<absl::string_view> names;
  for (const MigProduct& product : kProducts) {
    names.insert(names.end(), product.names.begin(), product.names.end());
  }
  return absl::StrJoin(names, ", ");
}

const GiProfile* FindGiProfile(const MigProduct& product, unsigned profile) {
  for (const GiProfile& p : product.profiles) {
    if (p.profile == profile) return &p;
  }
  return nullptr;
}

const GiProfile* FindGiProfileById(const MigProduct& product, unsigned id) {
  for (const GiProfile& p : product.profiles) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

const GiProfile* FindGiProfileByName(const MigProduct& product,
                                     absl::string_view name) {
  for (const GiProfile& p : product.profiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<unsigned> PlacementStarts(const GiProfile& profile) {
  std::vector<unsigned> starts;
  for (unsigned s = 0; s < kMemorySlices; ++s) {
    if ((profile.starts >> s) & 1) starts.push_back(s);
  }
  return starts;
}

unsigned GpuInstanceId(unsigned start, unsigned memory_slices) {
  // Level of the tree: 8 slices -> first node 0, 4 -> 1, 2 -> 3, 1 -> 7.
  const unsigned first = kMemorySlices / memory_slices - 1;
  return first + start / memory_slices;
}

std::optional<CiProfile> FindCiProfile(const GiProfile& gi, unsigned profile) {
  if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) return std::nullopt;
  const unsigned slices = kCiSlices[profile];
  if (slices == 0 || slices > gi.slices) return std::nullopt;
  CiProfile ci;
  ci.profile = profile;
  ci.slices = slices;
  ci.instance_count = gi.slices / slices;
  ci.multiprocessors = gi.multiprocessors * slices / gi.slices;
  ci.name = slices == gi.slices ? std::string(gi.name)
                                : absl::StrCat(slices, "c.", gi.name);
  return ci;
}

CiProfile WholeCiProfile(const GiProfile& gi) {
  for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    std::optional<CiProfile> ci = FindCiProfile(gi, p);
    if (ci.has_value() && ci->slices == gi.slices) return *ci;
  }
  // Every table row has 1, 2, 3, 4 or 7 compute slices.
  return *FindCiProfile(gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
}

std::optional<CiProfile> FindCiProfileByName(const GiProfile& gi,
                                             absl::string_view name) {
  for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    std::optional<CiProfile> ci = FindCiProfile(gi, p);
    if (ci.has_value() && ci->name == name) return ci;
  }
  return std::nullopt;
}

std::string KnownCiProfiles(const GiProfile& gi) {
  std::vector<std::string> names;
  for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    if (std::optional<CiProfile> ci = FindCiProfile(gi, p)) {
      names.push_back(ci->name);
    }
  }
  return absl::StrJoin(names, ", ");
}

std::string MigUuid(absl::string_view gpu_uuid, unsigned gi, unsigned ci) {
  const std::string key = absl::StrCat(gpu_uuid, "/", gi, "/", ci);
  uint64_t high = Fnv1a(key, 0xCBF29CE484222325ull);
  uint64_t low = Fnv1a(key, 0x84222325CBF29CE4ull);
  // Version 5 in the time_hi nibble, RFC 4122 variant in clock_seq.
  high = (high & ~0xF000ull) | 0x5000ull;
  low = (low & ~(0xC000ull << 48)) | (0x8000ull << 48);
  return absl::StrFormat("MIG-%08x-%04x-%04x-%04x-%012x", high >> 32,
                         (high >> 16) & 0xFFFF, high & 0xFFFF, low >> 48,
                         low & 0xFFFFFFFFFFFFull);
}

}  // namespace gdp::fake_nvml
