// The binder's log: one line per call on standard error, prefixed with the UTC time (milliseconds);
// lines from different threads never interleave.
#pragma once

#include <string>

namespace gantry::binder {

void Log(const std::string& line);

}  // namespace gantry::binder
