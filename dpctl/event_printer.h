// Writes events to a stream, one line per event, as JSON or as text.
#ifndef GDP_DPCTL_EVENT_PRINTER_H_
#define GDP_DPCTL_EVENT_PRINTER_H_

#include <ostream>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "events.h"

namespace gdp::dpctl {

enum class OutputFormat { kText, kJson };

// The human-readable form of an event built by events.h or dra_events.h:
// one line, or for device and claim lists a head line and one indented
// line per item, e.g.
//   devices nvidia.com/gpu: 1/2 healthy
//     GPU-0 (Healthy, numa 0)
//     GPU-1 (Unhealthy, numa 1): XID 48 (...); unhealthy until the GPU ...
//   registered gpu.nvidia.com (endpoint /p/dra.sock, versions
//     [v1.DRAPlugin, v1beta1.DRAPlugin], api v1): ok        (one line)
//   prepare gpu.nvidia.com (api v1, 3 ms): 1 claim
//     uid-1: pool-a/gpu-0 -> k8s.gpu.nvidia.com/claim=uid-1-gpu-0
// Unknown events print as their JSON. Thread-safe (pure function).
std::string EventText(const Json& event);

// The one-line text form of ContainerResponseJson, e.g.
//   env A=1; mount /h -> /c ro; device /dev/h -> /dev/c rw; cdi x.com/y=z
std::string ContainerResponseText(const Json& response);

// An EventSink that prints each event as one line (its JSON object, or
// EventText) and flushes it at once, so a reader on a
// pipe sees events as they happen. Thread-safe: lines from concurrent Emit
// calls never interleave.
class EventPrinter : public EventSink {
 public:
  // `out` is not owned and must outlive the printer.
  EventPrinter(std::ostream* out, OutputFormat format);

  void Emit(const Json& event) override;

 private:
  absl::Mutex mu_;
  std::ostream* const out_ ABSL_PT_GUARDED_BY(mu_);
  const OutputFormat format_;
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_EVENT_PRINTER_H_
