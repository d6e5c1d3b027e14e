// What the grouping plugins and the owner resolution read from the cluster: objects by
// apiVersion, kind, namespace and name, pods by labels, PriorityClass existence. The live
// implementation (kube_cluster.h) answers from informer caches for the kinds it watches and
// from the API server for the others; tests use FakeCluster (an in-memory set of objects).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kube/client.h"
#include "util/status.h"

namespace gantry::podgrouper {

using ObjectPtr = std::shared_ptr<const kube::Object>;

// A failed read: NotFound, Forbidden, or another error (message names the object).
struct ReadError {
  enum class Kind { kNotFound, kForbidden, kOther } kind = Kind::kOther;
  std::string message;
};

template <typename T>
struct ReadResult {
  T value{};
  std::optional<ReadError> error;
  bool ok() const { return !error.has_value(); }
};

class Cluster {
 public:
  virtual ~Cluster() = default;
  // `api_version` is "v1" or "group/version". The object carries apiVersion and kind.
  virtual ReadResult<ObjectPtr> Get(const std::string& api_version, const std::string& kind,
                                    const std::string& ns, const std::string& name) = 0;
  // Pods in `ns` carrying every label of `labels`.
  virtual ReadResult<std::vector<ObjectPtr>> ListPods(
      const std::string& ns, const std::map<std::string, std::string>& labels) = 0;
  virtual bool PriorityClassExists(const std::string& name) = 0;
  // The cluster-scoped run.ai/v1alpha1 Karta objects carrying every label of `labels` (the
  // generic Karta fallback); NotFound when the Karta CRD is not installed.
  virtual ReadResult<std::vector<ObjectPtr>> ListKartas(
      const std::map<std::string, std::string>& labels) = 0;
};

// An in-memory cluster for tests (and for dry runs): objects are added with their apiVersion,
// kind, namespace and name; `forbidden` kinds answer Forbidden.
class FakeCluster : public Cluster {
 public:
  void Add(kube::Object object);
  void Forbid(const std::string& kind) { forbidden_.push_back(kind); }
  ReadResult<ObjectPtr> Get(const std::string& api_version, const std::string& kind,
                            const std::string& ns, const std::string& name) override;
  ReadResult<std::vector<ObjectPtr>> ListPods(
      const std::string& ns, const std::map<std::string, std::string>& labels) override;
  bool PriorityClassExists(const std::string& name) override;
  ReadResult<std::vector<ObjectPtr>> ListKartas(
      const std::map<std::string, std::string>& labels) override;
  // ListKartas answers NotFound, as an API server without the Karta CRD.
  void RemoveKartaCrd() { karta_crd_missing_ = true; }
  int karta_lists() const { return karta_lists_; }

 private:
  bool karta_crd_missing_ = false;
  int karta_lists_ = 0;
  std::map<std::string, ObjectPtr> objects_;  // "apiVersion|kind|ns|name"
  std::vector<std::string> forbidden_;
};

}  // namespace gantry::podgrouper
