// The DRA side's record of prepared claims, kept on the host so that a
// plugin restart still knows them (the kubelet does not prepare them again)
// and a reboot can write their CDI specs again (/var/run/cdi is tmpfs; the
// kubelet prepares them again from its own checkpoint and expects them).
// A JSON file of our own format, versioned and checksummed, written
// atomically.
#ifndef GDP_DRA_CHECKPOINT_H_
#define GDP_DRA_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra/claim.h"
#include "dra/dynamic_mig.h"

namespace gdp::dra {

// The newest format this build reads and writes. Version 2 adds the share
// of a device (shareID, memoryLimit, shares); version 3 a claim's state
// (being prepared or unprepared) and a device's dynamic MIG instance. A
// checkpoint is written in the oldest version that holds it (without
// shares: 1), so that an older plugin still reads it; one that could not
// keep a MIG intent refuses version 3 rather than lose it.
inline constexpr int kCheckpointVersion = 3;

// The most a checkpoint file may hold. A device is in one claim at a time
// and an entry takes well under 1 KiB, so a node's checkpoint is some KiB
// (a few hundred claims on a few hundred devices: ~100 KiB); a larger file
// is damage, refused unread (a 200 MB one OOM-killed every start), and a
// checkpoint that would grow past it is not written.
inline constexpr size_t kMaxCheckpointBytes = 4 << 20;

// One device of a prepared claim, as answered to the kubelet.
struct PreparedDevice {
  std::vector<std::string> requests;
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_ids;
  // For a share of a device (allocated with allowMultipleAllocations): the
  // scheduler's share ID (answered to the kubelet), the hard memory limit
  // its CDI device carries (bytes; 0: none) and the count of `shares` it
  // consumed (0: none). All empty/0 for a device given whole.
  std::string share_id = "";
  uint64_t memory_limit = 0;
  uint64_t shares = 0;
  // Given with adminAccess (which may overlap any other claim's use).
  bool admin_access = false;
  // A dynamic MIG device (a profile placement made at prepare): what it
  // makes and, once made, its instances.
  std::optional<MigRecord> mig = std::nullopt;
  bool operator==(const PreparedDevice&) const = default;
};

// Where a claim stands. Only a claim with dynamic MIG devices is ever
// recorded before it is prepared: kPreparing is written before any of its
// instances is made (so a restart knows what to destroy), kUnpreparing
// before any is destroyed; the claim leaves the checkpoint after its
// instances are destroyed.
enum class ClaimState { kPrepared, kPreparing, kUnpreparing };

struct PreparedClaim {
  ClaimRef ref;
  std::vector<PreparedDevice> devices;
  // The sharing applied to each device, by device name (to write the CDI
  // spec again).
  std::map<std::string, Sharing> sharing;
  ClaimState state = ClaimState::kPrepared;
  bool operator==(const PreparedClaim&) const = default;
};

struct Checkpoint {
  std::string boot_id;  // of the boot the claims were prepared in
  std::map<std::string, PreparedClaim> claims;  // by claim UID
  bool operator==(const Checkpoint&) const = default;
};

// The file's text: {"kind", "version", "bootID", "claims": [...],
// "checksum"} with a checksum (FNV-1a, 64 bits) over the rest; version 3
// when a claim is not prepared ("state": "Preparing" or "Unpreparing") or a
// device is dynamic MIG ("mig": {"gpuUUID", "gpuMinor", "profile",
// "profileID", "ciProfileID", "start", "size", and once made "giID",
// "ciID", "uuid"}), else version 2 when a device is a share (its
// "shareID", "memoryLimit", "shares"), else version 1; "adminAccess" only
// when true (older readers ignore it).
std::string SerializeCheckpoint(const Checkpoint& checkpoint);

// Reads a checkpoint's text; `path` names it in messages.
// Result on failure: DataLoss "<path>: ..." for text that is not a
// checkpoint of ours (not JSON, nested deeper than 100 levels, wrong kind,
// checksum mismatch, a missing or mistyped field: named); FailedPrecondition
// "<path>: written in format N by a newer gpu-device-plugin; this one reads up
// to 3" for a newer version; a version 1 or 2 file reads with every claim
// prepared and no MIG instances (version 1: no shares either).
absl::StatusOr<Checkpoint> ParseCheckpoint(absl::string_view text,
                                           const std::string& path);

// `text` with its "checksum" made right for the rest of it (as compact
// JSON) when it is a JSON object; otherwise `text` as it is. For tests and
// fuzzing, which change a checkpoint's fields and want ParseCheckpoint to
// get past the checksum to them.
std::string RestampCheckpoint(absl::string_view text);

// Reads the checkpoint at `path` (not following a symlink; never blocking
// on a FIFO). Result on failure: NotFound when there is no file; DataLoss
// "<path> is larger than 4194304 bytes" or "<path> is not a regular file
// (...)" without reading it; the errno's status naming the path when it
// cannot be read; else as ParseCheckpoint.
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);

// Writes it atomically (mode 0600; the directory is created 0700 if
// missing), fsynced unless `durable` is false (WriteFileAtomically: it then
// survives a crash of the process, not a power loss). Result on failure:
// ResourceExhausted naming the path for a checkpoint over
// kMaxCheckpointBytes (nothing written); the errno's status naming the path.
absl::Status WriteCheckpoint(const std::string& path,
                             const Checkpoint& checkpoint, bool durable = true);

}  // namespace gdp::dra

#endif  // GDP_DRA_CHECKPOINT_H_
