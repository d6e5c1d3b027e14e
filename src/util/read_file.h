// Reading a whole input file (scenario, configuration, kubeconfig, certificate, token) with a
// size cap, so that a path such as /dev/zero or a runaway file ends in an error instead of
// exhausting memory, and a directory is refused instead of reading as empty.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include "util/status.h"

namespace gantry {

// Generous for any scenario or configuration; a 5,000-node scenario is a few MB.
inline constexpr size_t kMaxInputFileBytes = size_t{256} << 20;

inline Result<std::string> ReadInputFile(const std::string& path,
                                         size_t max_bytes = kMaxInputFileBytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Error{path + ": is a directory, not a file"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open file"};
  std::string out;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    const auto n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    if (out.size() + n > max_bytes) {
      return Error{path + ": larger than " + std::to_string(max_bytes) + " bytes"};
    }
    out.append(buf, n);
  }
  if (in.bad()) return Error{path + ": read error"};
  return out;
}

}  // namespace gantry
