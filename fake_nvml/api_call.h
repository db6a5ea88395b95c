// The shared prologue of every exported NVML call except init, shutdown and
// nvmlErrorString: take the library lock, wait (with the lock released)
// while a hang fault covers the call, then, holding the lock for the rest of
// the call, check that the library is initialized, that no "fail" fault is
// active and, for device calls, that the handle is one of this session's and
// its GPU is not lost.
//
// Hang faults come before every other check: "hang-all" blocks every call,
// "hang <gpu>" every call taking a GPU, MIG device, GPU instance or compute
// instance handle of that GPU (a handle the session did not issue blocks
// nothing). A blocked call proceeds, and answers as it would have at that
// moment, once "recover" ends the hang, or with UNINITIALIZED once the last
// nvmlShutdown ends the session. Blocked calls hold no lock, so other calls
// and the control watcher go on.
//
//   ApiCall call(device);
//   if (call.status() != NVML_SUCCESS) return call.status();
//   ... use call.gpu() ...
//
// Device calls take GPU handles only unless they say they accept MIG device
// handles too; a MIG device handle passed to a GPU-only call is a valid
// handle for a query the device does not support: NOT_SUPPORTED.
#ifndef GDP_FAKE_NVML_API_CALL_H_
#define GDP_FAKE_NVML_API_CALL_H_

#include <optional>
#include <string>

#include "fake_nvml/machine.h"
#include "fake_nvml/session.h"
#include "fake_nvml/state_mutex.h"
#include "nvml/nvml_api.h"

namespace gdp::fake_nvml {

class ABSL_SCOPED_LOCKABLE ApiCall {
 public:
  // A call not about one device (blocked by "hang-all" only). status():
  // UNINITIALIZED, the injected code of an active "fail" fault, or SUCCESS.
  ApiCall() ABSL_EXCLUSIVE_LOCK_FUNCTION(state_mutex);

  // Which device handles a device call accepts.
  enum class Accept { kGpu, kGpuOrMig };

  // A call about `device`. status() as above, then INVALID_ARGUMENT if
  // `device` is not a handle of the current session, NOT_SUPPORTED for a
  // MIG device handle unless `accept` is kGpuOrMig, GPU_IS_LOST if its GPU
  // (a MIG device's parent) is lost, and for a MIG device the code of an
  // active "fail-mig" fault on it.
  explicit ApiCall(nvmlDevice_t device, Accept accept = Accept::kGpu)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(state_mutex);

  // A call about two GPUs: as the device constructor for `device` (GPU
  // handles only), and a hang of `other`'s GPU blocks it too. Check `other`
  // with Resolve.
  ApiCall(nvmlDevice_t device, nvmlDevice_t other)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(state_mutex);

  // A call about a GPU instance or compute instance: status() as above,
  // then INVALID_ARGUMENT if it is not one of the current session,
  // GPU_IS_LOST if its GPU is lost, and for a compute instance the code of
  // an active "fail-mig" fault on its MIG device.
  explicit ApiCall(nvmlGpuInstance_t gpu_instance)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(state_mutex);
  explicit ApiCall(nvmlComputeInstance_t compute_instance)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(state_mutex);

  ~ApiCall() ABSL_UNLOCK_FUNCTION();

  ApiCall(const ApiCall&) = delete;
  ApiCall& operator=(const ApiCall&) = delete;

  nvmlReturn_t status() const { return status_; }

  // The current session; only when status() is SUCCESS.
  Session& session() const { return *session_; }

  // The GPU of a device call (a MIG device's or instance's parent); only
  // when status() is SUCCESS.
  unsigned index() const { return index_; }
  const Gpu& gpu() const { return session_->machine().gpus[index_]; }

  // The MIG device of a call about a MIG device handle or compute instance
  // (its index under the GPU), nullopt for a GPU handle.
  std::optional<unsigned> mig() const { return mig_; }
  const MigDevice& mig_device() const { return gpu().mig_devices[*mig_]; }
  // The GPU instance of a call about a MIG device, compute instance or GPU
  // instance.
  const GpuInstance& gpu_instance() const {
    return gpu().gpu_instances[gpu_instance_];
  }
  unsigned gpu_instance_pos() const { return gpu_instance_; }
  // The compute instance of a call about a MIG device or compute instance.
  const ComputeInstance& compute_instance() const {
    return gpu_instance().compute_instances[mig_device().compute_instance];
  }

  // Checks a further GPU handle argument with the rules of the device
  // constructor (GPU handles only); on SUCCESS stores its index in *index.
  nvmlReturn_t Resolve(nvmlDevice_t device, unsigned* index) const;

  // Re-evaluates status() (initialized, no "fail" fault; the shared MIG
  // layout is re-read when it changed, Session::SyncMig) after state_mutex
  // was released and reacquired, e.g. by a wait, and returns it.
  nvmlReturn_t Refresh() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

 private:
  // The handles a call takes, for hang faults; null where it takes none.
  struct Subject {
    nvmlDevice_t devices[2] = {nullptr, nullptr};
    nvmlGpuInstance_t gpu_instance = nullptr;
    nvmlComputeInstance_t compute_instance = nullptr;
  };

  // Whether no hang fault holds back a call about *subject now: the library
  // is not initialized, or neither "hang-all" nor a hang of the GPU of one
  // of its handles is in force. A condition for state_mutex.Await.
  static bool Released(const Subject* subject)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // Blocks, with state_mutex released, until Released(&subject).
  static void AwaitRelease(const Subject& subject)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // The checks of the device constructor after the hang wait.
  void CheckDevice(nvmlDevice_t device, Accept accept)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // Sets the call to MIG device `mig` of GPU `gpu`, or to GPU_IS_LOST or the
  // device's "fail-mig" code.
  void SetMig(unsigned gpu, unsigned mig);

  Session* session_ = nullptr;
  nvmlReturn_t status_ = NVML_SUCCESS;
  unsigned index_ = 0;
  std::optional<unsigned> mig_;
  unsigned gpu_instance_ = 0;
};

// Copies `value` and its NUL into `buffer` of `length` bytes: INVALID_ARGUMENT
// for a null buffer, INSUFFICIENT_SIZE (nothing written) when it does not
// fit.
nvmlReturn_t CopyString(const std::string& value, char* buffer,
                        unsigned length);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_API_CALL_H_
