// kubeflow.org/v1beta1 Notebook: the default grouper with priority class "build".
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class NotebookGrouper : public Grouper {
 public:
  explicit NotebookGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "Kubeflow Notebook Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto md = d_->Group(top_owner, pod, {});
    if (md.ok()) md.value().priority_class = d_->PriorityClass(top_owner, pod, kBuildPriorityClass);
    return md;
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterNotebook(Hub& hub) {
  hub.Register("kubeflow.org", "v1beta1", "Notebook",
               std::make_shared<NotebookGrouper>(hub.default_ptr()));
}

}  // namespace gantry::podgrouper
