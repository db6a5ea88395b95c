// The Node Feature Discovery local feature file the labels are written to:
// one "name=value" line per label, replaced atomically so that NFD's worker
// (which re-reads the directory every minute) never sees a partial file.
#ifndef GDP_LABELS_FEATURE_FILE_H_
#define GDP_LABELS_FEATURE_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "labels/labels.h"

namespace gdp {

// "<name>=<value>\n" for each label, sorted by name.
std::string FormatFeatureFile(const Labels& labels);

// Writes FormatFeatureFile(labels) to `path`, mode 0644, replacing it
// atomically: the content goes to a temporary file beside it named
// ".<file name>.XXXXXX" (NFD skips dot-files), is fsynced and renamed over
// `path`, and the directory is fsynced. Creates the directory (and parents)
// if missing. Thread-safe; concurrent calls leave one complete file.
// Result on failure: InvalidArgument for a path without a file name; else
// the errno's status (PermissionDenied, NotFound, Internal ...), the message
// naming the path; no temporary file is left.
absl::Status WriteFeatureFile(const std::string& path, const Labels& labels);

// Removes `path`; a missing file is not an error.
// Result on failure: the errno's status, the message naming the path.
absl::Status RemoveFeatureFile(const std::string& path);

}  // namespace gdp

#endif  // GDP_LABELS_FEATURE_FILE_H_
