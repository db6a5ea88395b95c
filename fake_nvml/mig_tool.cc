#include "fake_nvml/mig_tool.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fake_nvml/machine_loader.h"
#include "fake_nvml/mig_state.h"

namespace gdp::fake_nvml {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "fake-nvml mig: %s\n", message.c_str());
  return 1;
}

// NVML's name of the codes the MIG operations answer.
const char* CodeName(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS:
      return "SUCCESS";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NOT_SUPPORTED";
    case NVML_ERROR_NOT_FOUND:
      return "NOT_FOUND";
    case NVML_ERROR_IN_USE:
      return "IN_USE";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "INSUFFICIENT_RESOURCES";
    default:
      return "UNKNOWN";
  }
}

// A GPU instance profile of `gpu` by NVIDIA's name or profile ID.
const GiProfile* GiProfileOf(const Gpu& gpu, absl::string_view text) {
  unsigned id = 0;
  if (absl::SimpleAtoi(text, &id))
    return FindGiProfileById(*gpu.mig_product, id);
  return FindGiProfileByName(*gpu.mig_product, text);
}

std::optional<CiProfile> CiProfileOf(const GiProfile& gi,
                                     absl::string_view text) {
  unsigned id = 0;
  if (absl::SimpleAtoi(text, &id)) return FindCiProfile(gi, id);
  return FindCiProfileByName(gi, text);
}

void ListProfiles(const Machine& machine, unsigned g) {
  const Gpu& gpu = machine.gpus[g];
  for (const GiProfile& p : gpu.mig_product->profiles) {
    std::vector<std::string> starts;
    for (unsigned s : PlacementStarts(p)) {
      starts.push_back(absl::StrCat(s, ":", p.memory_slices));
    }
    std::printf("gpu %u profile %s id %u free %u/%u placements %s\n", g, p.name,
                p.id, RemainingGpuInstances(gpu, p), p.instance_count,
                absl::StrJoin(starts, ",").c_str());
  }
}

void ListInstances(const Machine& machine, unsigned g, bool cis) {
  const Gpu& gpu = machine.gpus[g];
  for (const GpuInstance& gi : gpu.gpu_instances) {
    if (!cis) {
      std::printf("gpu %u gi %u profile %s id %u placement %u:%u\n", g, gi.id,
                  gi.profile->name, gi.profile->id, gi.start,
                  gi.profile->memory_slices);
      continue;
    }
    for (const ComputeInstance& ci : gi.compute_instances) {
      std::printf("gpu %u gi %u ci %u profile %s id %u placement %u:%u%s %s\n",
                  g, gi.id, ci.id, ci.profile.name.c_str(), ci.profile.profile,
                  ci.start, ci.profile.slices, ci.busy ? " busy" : "",
                  MigUuid(gpu.uuid, gi.id, ci.id).c_str());
    }
  }
}

// Applies the changing action of `args` to GPU `g` of `machine`; the lines
// to print go to *out.
nvmlReturn_t Change(const MigToolArgs& args, Machine& machine, unsigned g,
                    std::string* error, std::vector<std::string>* out) {
  Gpu& gpu = machine.gpus[g];
  if (args.mode.has_value()) {
    nvmlReturn_t activation = NVML_SUCCESS;
    nvmlReturn_t r = SetMigMode(&gpu, *args.mode, &activation);
    if (r != NVML_SUCCESS) return r;
    out->push_back(absl::StrCat("gpu ", g, " mig mode pending ",
                                gpu.mig_pending, " current ", gpu.mig_current,
                                " activation ", CodeName(activation)));
    return NVML_SUCCESS;
  }
  if (args.reset) {
    ResetMigMode(&gpu);
    out->push_back(
        absl::StrCat("gpu ", g, " reset: mig mode current ", gpu.mig_current));
    return NVML_SUCCESS;
  }
  if (!args.cgi.empty()) {
    for (absl::string_view item : absl::StrSplit(args.cgi, ',')) {
      std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
      const GiProfile* profile = GiProfileOf(gpu, parts[0]);
      std::optional<unsigned> start;
      unsigned s = 0;
      if (parts.size() == 2 && absl::SimpleAtoi(parts[1], &s)) start = s;
      if (profile == nullptr || parts.size() > 2 ||
          (parts.size() == 2 && !start.has_value())) {
        *error = absl::StrCat("\"", item, "\" is not PROFILE[:START] of a ",
                              gpu.name, " GPU instance profile");
        return NVML_ERROR_INVALID_ARGUMENT;
      }
      unsigned id = 0;
      nvmlReturn_t r = CreateGpuInstance(&gpu, *profile, start, &id);
      if (r != NVML_SUCCESS) {
        *error = absl::StrCat("GPU ", g, ": creating a ", profile->name,
                              " GPU instance");
        return r;
      }
      out->push_back(
          absl::StrCat("gpu ", g, " created gi ", id, " ", profile->name));
      if (args.with_ci) {
        unsigned ci = 0;
        r = CreateComputeInstance(&gpu, id, WholeCiProfile(*profile),
                                  std::nullopt, &ci);
        if (r != NVML_SUCCESS) return r;
        out->push_back(absl::StrCat("gpu ", g, " gi ", id, " created ci ", ci));
      }
    }
    return NVML_SUCCESS;
  }
  std::vector<unsigned> gis;
  for (const GpuInstance& gi : gpu.gpu_instances) {
    if (!args.gi.has_value() || gi.id == *args.gi) gis.push_back(gi.id);
  }
  if (args.gi.has_value() && gis.empty()) {
    *error = absl::StrCat("GPU ", g, " has no GPU instance ", *args.gi);
    return NVML_ERROR_NOT_FOUND;
  }
  for (unsigned gi_id : gis) {
    GpuInstance* gi = nullptr;
    for (GpuInstance& each : gpu.gpu_instances) {
      if (each.id == gi_id) gi = &each;
    }
    if (args.cci_set) {
      std::vector<std::string> names = absl::StrSplit(args.cci, ',');
      if (args.cci.empty()) names = {gi->profile->name};
      for (const std::string& name : names) {
        std::optional<CiProfile> profile = CiProfileOf(*gi->profile, name);
        if (!profile.has_value()) {
          *error = absl::StrCat("\"", name,
                                "\" is not a compute instance "
                                "profile of a ",
                                gi->profile->name, " GPU instance (known: ",
                                KnownCiProfiles(*gi->profile), ")");
          return NVML_ERROR_INVALID_ARGUMENT;
        }
        unsigned id = 0;
        nvmlReturn_t r =
            CreateComputeInstance(&gpu, gi_id, *profile, std::nullopt, &id);
        if (r != NVML_SUCCESS) {
          *error =
              absl::StrCat("GPU ", g, " GPU instance ", gi_id, ": creating a ",
                           profile->name, " compute instance");
          return r;
        }
        for (GpuInstance& each : gpu.gpu_instances) {
          if (each.id == gi_id) gi = &each;
        }
        out->push_back(
            absl::StrCat("gpu ", g, " gi ", gi_id, " created ci ", id));
      }
      continue;
    }
    std::vector<unsigned> cis;
    for (const ComputeInstance& ci : gi->compute_instances) {
      if (!args.ci.has_value() || ci.id == *args.ci) cis.push_back(ci.id);
    }
    if (args.ci.has_value() && cis.empty()) {
      *error = absl::StrCat("GPU ", g, " GPU instance ", gi_id,
                            " has no compute instance ", *args.ci);
      return NVML_ERROR_NOT_FOUND;
    }
    if (args.busy || args.idle) {
      for (unsigned ci : cis) {
        SetComputeInstanceBusy(&gpu, gi_id, ci, args.busy);
        out->push_back(absl::StrCat("gpu ", g, " gi ", gi_id, " ci ", ci,
                                    args.busy ? " busy" : " idle"));
      }
      continue;
    }
    if (args.dci) {
      for (unsigned ci : cis) {
        nvmlReturn_t r = DestroyComputeInstance(&gpu, gi_id, ci);
        if (r != NVML_SUCCESS) {
          *error = absl::StrCat("GPU ", g, " GPU instance ", gi_id,
                                ": destroying compute instance ", ci);
          return r;
        }
        out->push_back(
            absl::StrCat("gpu ", g, " gi ", gi_id, " destroyed ci ", ci));
      }
      continue;
    }
    if (args.dgi) {
      nvmlReturn_t r = DestroyGpuInstance(&gpu, gi_id);
      if (r != NVML_SUCCESS) {
        *error = absl::StrCat("GPU ", g, ": destroying GPU instance ", gi_id);
        return r;
      }
      out->push_back(absl::StrCat("gpu ", g, " destroyed gi ", gi_id));
    }
  }
  return NVML_SUCCESS;
}

}  // namespace

CLI::App* AddMigCommand(CLI::App& app, MigToolArgs* args) {
  CLI::App* mig = app.add_subcommand(
      "mig",
      "List, make and destroy MIG instances in the MIG state every process "
      "using the fake library shares (like nvidia-smi mig). One action per "
      "run: --lgip, --lgi, --lci, --cgi, --cci, --dci, --dgi, --busy, "
      "--idle, --mode or --reset; -i picks a GPU (default: every "
      "MIG-capable one; one GPU for changes), --gi and --ci instances.");
  mig->add_option("--machine", args->machine,
                  "Machine YAML file (default: $FAKE_NVML_MACHINE)");
  mig->add_option("--state", args->state,
                  "MIG state file (default: $FAKE_NVML_MIG_STATE, else "
                  "mig-state beside $FAKE_NVML_CONTROL)");
  mig->add_option("-i,--id", args->gpu, "GPU index");
  mig->add_option("--gi", args->gi, "GPU instance ID");
  mig->add_option("--ci", args->ci, "Compute instance ID");
  mig->add_option("--cgi", args->cgi,
                  "Create GPU instances: profiles by name or ID, each "
                  "optionally :START (a placement), comma-separated");
  mig->add_option("--cci", args->cci,
                  "Create compute instances in --gi (or every GPU instance): "
                  "profiles by name or ID, comma-separated; empty: the whole "
                  "GPU instance")
      ->expected(0, 1);
  mig->add_flag("-C", args->with_ci,
                "--cgi: also create each GPU instance's whole compute "
                "instance");
  mig->add_flag("--dgi", args->dgi, "Destroy GPU instances (--gi or all)");
  mig->add_flag("--dci", args->dci,
                "Destroy compute instances (--gi, --ci or all)");
  mig->add_flag("--lgip", args->lgip,
                "List GPU instance profiles, free/total and placements");
  mig->add_flag("--lgi", args->lgi, "List GPU instances");
  mig->add_flag("--lci", args->lci, "List compute instances");
  mig->add_option("--mode", args->mode,
                  "Set MIG mode (0 or 1) as nvmlDeviceSetMigMode does")
      ->check(CLI::Range(0, 1));
  mig->add_flag("--reset", args->reset,
                "Reset the GPU: its pending MIG mode becomes current");
  mig->add_flag("--busy", args->busy,
                "Mark compute instances busy (processes on them: destroying "
                "them is IN_USE)");
  mig->add_flag("--idle", args->idle, "Mark compute instances idle");
  return mig;
}

int RunMigCommand(const MigToolArgs& in) {
  MigToolArgs args = in;
  const std::string machine_path =
      args.machine.empty() ? Env("FAKE_NVML_MACHINE") : args.machine;
  if (machine_path.empty()) return Fail("needs --machine or FAKE_NVML_MACHINE");
  std::string state = args.state;
  if (state.empty()) {
    std::optional<std::string> path =
        MigStatePath(Env("FAKE_NVML_MIG_STATE"), Env("FAKE_NVML_CONTROL"));
    if (!path.has_value()) {
      return Fail(
          "needs --state, FAKE_NVML_MIG_STATE or FAKE_NVML_CONTROL (where "
          "the library keeps the MIG state)");
    }
    state = *path;
  }
  const int actions = (!args.cgi.empty()) + args.cci_set + args.dgi + args.dci +
                      args.lgi + args.lgip + args.lci + args.mode.has_value() +
                      args.reset + args.busy + args.idle;
  if (actions != 1) {
    return Fail(
        "give exactly one of --lgip, --lgi, --lci, --cgi, --cci, --dgi, "
        "--dci, --busy, --idle, --mode, --reset");
  }
  absl::StatusOr<Machine> loaded = LoadMachineFile(machine_path);
  if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
  Machine machine = *std::move(loaded);
  std::vector<unsigned> gpus;
  for (unsigned g = 0; g < machine.gpus.size(); ++g) {
    if (args.gpu.has_value() && g != *args.gpu) continue;
    if (machine.gpus[g].mig_capable && machine.gpus[g].mig_product != nullptr) {
      gpus.push_back(g);
    }
  }
  if (args.gpu.has_value() && gpus.empty()) {
    return Fail(
        absl::StrCat("no MIG-capable GPU ", *args.gpu, " in ", machine_path));
  }
  if (args.lgi || args.lgip || args.lci) {
    if (absl::Status s = ReadMigState(state, &machine); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    for (unsigned g : gpus) {
      if (args.lgip) {
        ListProfiles(machine, g);
      } else {
        ListInstances(machine, g, args.lci);
      }
    }
    return 0;
  }
  if (!args.gpu.has_value()) return Fail("changes need -i GPU");
  std::string error;
  std::vector<std::string> out;
  absl::StatusOr<nvmlReturn_t> r = UpdateMigState(
      state, &machine,
      [&](Machine& m) { return Change(args, m, *args.gpu, &error, &out); });
  if (!r.ok()) return Fail(std::string(r.status().message()));
  if (*r != NVML_SUCCESS) {
    return Fail(absl::StrCat(error.empty() ? "refused" : error, ": ",
                             CodeName(*r), " (nothing changed)"));
  }
  for (const std::string& line : out) std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace gdp::fake_nvml
