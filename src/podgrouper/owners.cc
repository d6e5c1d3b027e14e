#include "podgrouper/owners.h"

#include <set>

#include "podgrouper/json_util.h"

namespace gantry::podgrouper {

namespace {

// The owner reference being followed, and the messages naming it.
struct Ref {
  std::string api_version, kind, name, uid, ns;

  std::string NotFound(const std::string& why) const {
    return "failed to find " + kind + ": <" + ns + "/" + name + ">, uid: <" + uid + ">: " + why;
  }
  std::string Cycle(const kube::Object& pod) const {
    return "the owner references of pod " + ns + "/" + kube::NameOf(pod) + " form a cycle at " +
           kind + " " + ns + "/" + name + " (uid " + uid + ")";
  }
  std::string Recreated(const kube::Object& found) const {
    return NotFound("Owner resource with uid " + uid + " not found (found uid " +
                    kube::UidOf(found) + ")");
  }
  std::string MultipleOwners(const kube::Object& refs) const {
    return "found " + kind + " <" + name + " in namespace " + ns +
           "> with multiple owners: " + refs.dump();
  }
};

Ref ReadRef(const kube::Object& ref, const std::string& ns) {
  return {kube::StringAt(ref, {"apiVersion"}), kube::StringAt(ref, {"kind"}),
          kube::StringAt(ref, {"name"}), kube::StringAt(ref, {"uid"}), ns};
}

}  // namespace

Result<Owners> ResolveOwners(Cluster& cluster, const kube::Object& pod) {
  Owners out;
  const kube::Object* refs = At(pod, {"metadata", "ownerReferences"});
  if (refs == nullptr || !refs->is_array() || refs->empty()) {
    out.top = pod;
    return out;
  }
  std::string ns = kube::NamespaceOf(pod);
  std::set<std::string> seen{kube::UidOf(pod)};
  kube::Object ref = (*refs)[0];
  while (true) {
    const Ref r = ReadRef(ref, ns);
    if (!seen.insert(r.uid).second) return Error{r.Cycle(pod)};
    auto got = cluster.Get(r.api_version, r.kind, ns, r.name);
    if (!got.ok()) {
      if (got.error->kind == ReadError::Kind::kForbidden) {
        // No permission to read this owner: group at the level below it.
        if (out.chain.empty()) {
          out.top = pod;
        } else {
          out.top = out.chain.back();
        }
        return out;
      }
      return Error{r.NotFound(got.error->message)};
    }
    const kube::Object& owner = *got.value;
    if (kube::UidOf(owner) != r.uid) return Error{r.Recreated(owner)};
    kube::Object copy = owner;
    if (!copy.contains("apiVersion")) copy["apiVersion"] = r.api_version;
    if (!copy.contains("kind")) copy["kind"] = r.kind;
    out.chain.push_back(copy);
    const kube::Object* next = At(owner, {"metadata", "ownerReferences"});
    if (next == nullptr || !next->is_array() || next->empty()) {
      out.top = out.chain.back();
      return out;
    }
    if (next->size() > 1) return Error{r.MultipleOwners(*next)};
    ref = (*next)[0];
  }
}

}  // namespace gantry::podgrouper
