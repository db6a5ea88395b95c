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

// The human-readable form of an event built by events.h: one line, or for
// device lists a head line and one indented line per device, e.g.
//   devices nvidia.com/gpu: 1/2 healthy
//     GPU-0 (Healthy, numa 0)
//     GPU-1 (Unhealthy, numa 1): XID 48 (...); unhealthy until the GPU ...
// Unknown events print as their JSON. Thread-safe (pure function).
std::string EventText(const Json& event);

// The one-line text form of ContainerResponseJson, e.g.
//   env A=1; mount /h -> /c ro; device /dev/h -> /dev/c rw; cdi x.com/y=z
std::string ContainerResponseText(const Json& response);

// Renders an event as text, as EventText does; must be thread-safe.
using EventTextFn = std::string (*)(const Json& event);

// An EventSink that prints each event as one line (its JSON object, or its
// text form as `text` renders it) and flushes it at once, so a reader on a
// pipe sees events as they happen. Thread-safe: lines from concurrent Emit
// calls never interleave.
class EventPrinter : public EventSink {
 public:
  // `out` is not owned and must outlive the printer.
  EventPrinter(std::ostream* out, OutputFormat format,
               EventTextFn text = &EventText);

  void Emit(const Json& event) override;

 private:
  absl::Mutex mu_;
  std::ostream* const out_ ABSL_PT_GUARDED_BY(mu_);
  const OutputFormat format_;
  const EventTextFn text_;
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_EVENT_PRINTER_H_
