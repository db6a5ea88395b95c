// The human-readable form of the DRA events (dra_events.h), and a printer
// that writes every event, DRA or not, one per line.
#ifndef GDP_DPCTL_DRA_EVENT_TEXT_H_
#define GDP_DPCTL_DRA_EVENT_TEXT_H_

#include <ostream>
#include <string>

#include "event_printer.h"
#include "events.h"

namespace gdp::dpctl {

// One line per event, or for device and claim lists a head line and one
// indented line per item, e.g.
//   registered gpu.nvidia.com (endpoint /p/dra.sock, versions
//     [v1.DRAPlugin, v1beta1.DRAPlugin], api v1): ok        (one line)
//   prepare gpu.nvidia.com (api v1, 3 ms): 1 claim
//     uid-1: pool-a/gpu-0 -> k8s.gpu.nvidia.com/claim=uid-1-gpu-0
// Other events are rendered by EventText (event_printer.h). Thread-safe
// (pure function).
std::string DraEventText(const Json& event);

// An EventPrinter whose text form is DraEventText: each event as one line
// (DraEventText, or the JSON object), flushed at once. Thread-safe: lines
// from concurrent Emit calls never interleave.
class DraEventPrinter : public EventPrinter {
 public:
  // `out` is not owned and must outlive the printer.
  DraEventPrinter(std::ostream* out, OutputFormat format)
      : EventPrinter(out, format, &DraEventText) {}
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DRA_EVENT_TEXT_H_
