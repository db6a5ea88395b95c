#include "hook/limits.h"

#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cdi/memory_limit.h"
#include "util/bounded_json.h"

namespace gdp::hook {
namespace {

using nlohmann::json;

// 2^44 MiB is 2^64 bytes.
constexpr uint64_t kMaxMiB = (uint64_t{1} << 44) - 1;

bool IsOurCommand(absl::string_view c) {
  return c == cdi::kOurHookCommand || c == cdi::kNvidiaHookCommand;
}

absl::StatusOr<Share> ParseShare(const std::string& value) {
  std::vector<std::string> parts = absl::StrSplit(value, ',');
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--share '", value, "' is not <share-key>,<gpu-uuid>,<MiB>"));
  }
  absl::StatusOr<uint64_t> mib = ParseMiB("--share", parts[2]);
  if (!mib.ok()) return mib.status();
  return Share{parts[0], parts[1], *mib};
}

// The value of the first "name=..." in `env`.
std::optional<std::string> FindEnv(const std::vector<std::string>& env,
                                   const std::string& name) {
  for (const std::string& e : env) {
    if (e.size() > name.size() && e[name.size()] == '=' &&
        absl::StartsWith(e, name)) {
      return e.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

// The limit a --gpu-id GPU takes from `env` (NVIDIA's contract: one for
// every such GPU), in MiB; 0: none.
absl::StatusOr<uint64_t> EnvLimitMiB(const std::vector<std::string>& env) {
  std::optional<uint64_t> limit, request;
  if (std::optional<std::string> v = FindEnv(env, cdi::kNvidiaLimitEnv)) {
    absl::StatusOr<uint64_t> mib = ParseMiB(cdi::kNvidiaLimitEnv, *v);
    if (!mib.ok()) return mib.status();
    limit = *mib;
  }
  if (std::optional<std::string> v = FindEnv(env, cdi::kNvidiaRequestEnv)) {
    // 0 is a valid request (no reservation).
    uint64_t mib = 0;
    if (*v != "0") {
      absl::StatusOr<uint64_t> m = ParseMiB(cdi::kNvidiaRequestEnv, *v);
      if (!m.ok()) return m.status();
      mib = *m;
    }
    request = mib;
  }
  if (!limit.has_value()) {
    if (request.has_value() && *request > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          cdi::kNvidiaRequestEnv, "=", *request, " without ",
          cdi::kNvidiaLimitEnv,
          " asks for a soft reservation only; gdp-cdi-hook sets hard limits "
          "only (a soft limit outlives the container's cgroup): set ",
          cdi::kNvidiaLimitEnv));
    }
    return 0;
  }
  if (request.has_value() && *request > *limit) {
    return absl::InvalidArgumentError(
        absl::StrCat(cdi::kNvidiaRequestEnv, " (", *request, " MiB) exceeds ",
                     cdi::kNvidiaLimitEnv, " (", *limit, " MiB)"));
  }
  return *limit;
}

}  // namespace

absl::StatusOr<uint64_t> ParseMiB(absl::string_view what,
                                  absl::string_view value) {
  uint64_t mib = 0;
  bool digits = !value.empty() && value.size() <= 20;
  for (char c : value) {
    digits = digits && absl::ascii_isdigit(static_cast<unsigned char>(c));
  }
  if (!digits || !absl::SimpleAtoi(value, &mib) || mib == 0 || mib > kMaxMiB) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", value.substr(0, 64),
                     "' is not a whole number of MiB from 1 to ", kMaxMiB));
  }
  return mib;
}

absl::StatusOr<HookArgs> ParseHookArgs(const std::vector<std::string>& args) {
  if (args.size() < 2 || !IsOurCommand(args[1])) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected the subcommand ", cdi::kOurHookCommand, " (or ",
                     cdi::kNvidiaHookCommand, "), got '",
                     args.size() < 2 ? "" : args[1].substr(0, 64), "'"));
  }
  if (args.size() > 2 * kMaxHookFlags + 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("more than ", kMaxHookFlags, " flags"));
  }
  HookArgs out;
  for (size_t i = 2; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    if (size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (flag == "--driver-root" || flag == "--gpu-id" ||
               flag == "--share" || flag == "--container-spec") {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      }
      value = args[++i];
    }
    if (flag == "--driver-root") {
      out.driver_root = value;
    } else if (flag == "--container-spec") {
      out.container_spec = value;
    } else if (flag == "--gpu-id") {
      if (value.empty()) {
        return absl::InvalidArgumentError("--gpu-id must not be empty");
      }
      out.gpu_ids.push_back(value);
    } else if (flag == "--share") {
      absl::StatusOr<Share> share = ParseShare(value);
      if (!share.ok()) return share.status();
      out.shares.push_back(*std::move(share));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", flag.substr(0, 64), "'"));
    }
  }
  if (out.gpu_ids.size() + out.shares.size() > kMaxHookFlags) {
    return absl::InvalidArgumentError(
        absl::StrCat("more than ", kMaxHookFlags, " --gpu-id and --share"));
  }
  return out;
}

absl::StatusOr<OciState> ParseOciState(absl::string_view text) {
  absl::StatusOr<json> j = ParseBoundedJson(text, {.max_depth = 8});
  if (!j.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("OCI state on stdin: ", j.status().message()));
  }
  if (!j->is_object()) {
    return absl::InvalidArgumentError("OCI state on stdin is not an object");
  }
  OciState s;
  auto id = j->find("id");
  if (id != j->end() && id->is_string()) s.id = id->get<std::string>();
  auto pid = j->find("pid");
  if (pid == j->end() || !pid->is_number_integer() ||
      pid->get<int64_t>() <= 0 || pid->get<int64_t>() > (1 << 30)) {
    return absl::InvalidArgumentError(
        "OCI state on stdin has no positive pid (run the hook as a "
        "createRuntime hook)");
  }
  s.pid = static_cast<int>(pid->get<int64_t>());
  auto bundle = j->find("bundle");
  if (bundle == j->end() || !bundle->is_string() ||
      !absl::StartsWith(bundle->get_ref<const std::string&>(), "/")) {
    return absl::InvalidArgumentError(
        "OCI state on stdin has no absolute bundle path");
  }
  s.bundle = bundle->get<std::string>();
  return s;
}

absl::StatusOr<LimitPlan> PlanLimits(const std::vector<std::string>& own_args,
                                     const json& config) {
  absl::StatusOr<HookArgs> own = ParseHookArgs(own_args);
  if (!own.ok()) return own.status();

  // Every gdp-cdi-hook entry of the createRuntime hooks, in order.
  std::vector<std::vector<std::string>> entries;
  const json* hooks = nullptr;
  if (config.is_object()) {
    auto h = config.find("hooks");
    if (h != config.end() && h->is_object()) {
      auto cr = h->find("createRuntime");
      if (cr != h->end() && cr->is_array()) hooks = &*cr;
    }
  }
  LimitPlan plan;
  bool own_seen = false;
  if (hooks != nullptr) {
    for (const json& entry : *hooks) {
      if (!entry.is_object()) continue;
      auto a = entry.find("args");
      if (a == entry.end() || !a->is_array() || a->size() < 2) continue;
      std::vector<std::string> args;
      for (const json& s : *a) {
        if (!s.is_string()) break;
        args.push_back(s.get<std::string>());
      }
      if (args.size() != a->size()) continue;
      std::string base = args[0].substr(args[0].rfind('/') + 1);
      if (base != cdi::kOurHookName || !IsOurCommand(args[1])) continue;
      if (args == own_args) {
        // An earlier entry of ours with other args does the whole plan.
        if (!own_seen && !entries.empty()) plan.done_by_earlier_entry = true;
        own_seen = true;
      }
      entries.push_back(std::move(args));
    }
  }
  if (!own_seen) entries.push_back(own_args);

  std::map<std::string, Share> shares;  // by key
  std::set<std::string> env_gpus;
  for (const std::vector<std::string>& args : entries) {
    absl::StatusOr<HookArgs> parsed = ParseHookArgs(args);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a gdp-cdi-hook entry in config.json: ", parsed.status().message()));
    }
    for (const Share& s : parsed->shares) {
      auto [it, added] = shares.emplace(s.key, s);
      if (!added && !(it->second == s)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "share '", s.key, "' is given twice with different limits (",
            it->second.gpu_uuid, " ", it->second.mib, " MiB, ", s.gpu_uuid, " ",
            s.mib, " MiB)"));
      }
    }
    for (const std::string& g : parsed->gpu_ids) env_gpus.insert(g);
  }

  std::map<std::string, uint64_t> mib_by_gpu;
  for (const auto& [key, s] : shares) {
    uint64_t& sum = mib_by_gpu[s.gpu_uuid];
    if (sum + s.mib > kMaxMiB) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the shares of GPU ", s.gpu_uuid, " add up past ", kMaxMiB, " MiB"));
    }
    sum += s.mib;
  }
  if (!env_gpus.empty()) {
    std::vector<std::string> env;
    if (config.is_object()) {
      auto p = config.find("process");
      if (p != config.end() && p->is_object()) {
        auto e = p->find("env");
        if (e != p->end() && e->is_array()) {
          for (const json& v : *e) {
            if (v.is_string()) env.push_back(v.get<std::string>());
          }
        }
      }
    }
    for (const std::string& uuid : env_gpus) {
      absl::StatusOr<uint64_t> mib = EnvLimitMiB(env);
      if (!mib.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "GPU ", uuid, ": container env: ", mib.status().message()));
      }
      if (*mib == 0) continue;
      if (mib_by_gpu.contains(uuid)) {
        return absl::InvalidArgumentError(
            absl::StrCat("GPU ", uuid,
                         " has a limit both from shares (--share) and from the "
                         "container's env"));
      }
      mib_by_gpu[uuid] = *mib;
    }
  }
  for (const auto& [uuid, mib] : mib_by_gpu) {
    plan.hard_bytes[uuid] = mib * cdi::kMiB;
  }
  return plan;
}

}  // namespace gdp::hook
