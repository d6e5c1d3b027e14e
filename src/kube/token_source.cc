#include "kube/token_source.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace gantry::kube {

TokenSource::TokenSource(std::string token, std::string file)
    : token_(std::move(token)), file_(std::move(file)) {}

std::string TokenSource::Get() {
  if (file_.empty()) return token_;
  std::lock_guard<std::mutex> lock(mu_);
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0) return token_;
  if (loaded_ && st.st_mtim.tv_sec == mtime_.tv_sec && st.st_mtim.tv_nsec == mtime_.tv_nsec &&
      st.st_size == size_) {
    return token_;
  }
  std::ifstream in(file_, std::ios::binary);
  if (!in) return token_;
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  token_ = std::move(t);
  mtime_ = st.st_mtim;
  size_ = st.st_size;
  loaded_ = true;
  return token_;
}

}  // namespace gantry::kube
