// reflectjoborder: serves the order in which allocate would try the pending jobs, at GET
// /get-job-order of the live scheduler's plugin server (KAI's reflectjoborder plugin).
//
// Once every session is open it pops the jobs of a JobsByQueue built with allocate's own options
// (AllocateJobsOrderOptions: jobs with pending pods, ready for scheduling, allocate's queue depth)
// until it is empty, without allocating anything. This is the order of allocate's first pops:
// allocate's own order can change once it places jobs (queue shares move, elastic jobs are pushed
// back). KAI computes it in the plugin's OnSessionOpen, with the orders of the plugins opened
// before it; Gantry once all are open (Session's SessionOpened callbacks), so that the order is
// allocate's wherever the plugin is listed, and the same as KAI's when it is listed last.
//
// The answer is KAI's JSON, indented by two spaces and ending in a newline:
//   {"global_order": [{"id": <PodGroup name>, "priority": N}, ...],
//    "queue_order": {"<queue name>": [...], ...}}
// with KAI's v0.17 ids: a job's id is its PodGroup's name (KAI's PodGroupID) and a queue's its
// name (KAI's QueueID). Before the first session it answers 503 "Job order data not ready".
//
// The order is computed only when a plugin server asked for the endpoint (AddHttpHandlers):
// simulations and conformance runs do not pay for it. No arguments.
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "framework/jobs_by_queue.h"
#include "framework/plugin_http.h"
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

constexpr char kPath[] = "/get-job-order";

// What one session's order renders to: the whole reply body.
struct JobOrderReply {
  std::string body;
};

class ReflectJobOrderPlugin : public Plugin {
 public:
  std::string_view name() const override { return "reflectjoborder"; }

  void AddHttpHandlers(PluginHttpHandlers& handlers) override {
    serving_ = true;
    handlers[kPath] = [this]() -> PluginHttpReply {
      const auto latest = latest_.Latest();
      if (!latest) {
        return {503, "text/plain; charset=utf-8", "Job order data not ready\n"};
      }
      return {200, "application/json", latest->body};
    };
  }

  void OnSessionOpen(Session& ssn) override {
    if (serving_) ssn.AddSessionOpenedFn([this](Session& s) { Reflect(s); });
  }

 private:
  void Reflect(const Session& ssn) {
    const Cluster& c = ssn.cluster();
    auto global = nlohmann::json::array();
    auto by_queue = nlohmann::json::object();
    JobsByQueue jobs(ssn, AllocateJobsOrderOptions(ssn));
    jobs.InitializeWithAllJobs();
    while (!jobs.empty()) {
      const JobId j = jobs.PopNext();
      if (j == kNone) break;
      const Job& job = c.jobs[j];
      nlohmann::json entry = {{"id", job.name}, {"priority", job.priority}};
      by_queue[c.queues[job.queue].name].push_back(entry);
      global.push_back(std::move(entry));
    }
    const nlohmann::json reply = {{"global_order", std::move(global)},
                                  {"queue_order", std::move(by_queue)}};
    latest_.Publish(std::make_shared<const JobOrderReply>(
        JobOrderReply{reply.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"}));
  }

  bool serving_ = false;
  Published<JobOrderReply> latest_;
};

}  // namespace

void RegisterReflectJobOrderPlugin(PluginRegistry& r) {
  r.Register("reflectjoborder",
             [](const std::map<std::string, std::string>& args) -> Result<PluginPtr> {
               if (auto ok = plugin_util::CheckArgumentNames(args, {}); !ok.ok()) {
                 return Error{ok.error()};
               }
               return PluginPtr(std::make_unique<ReflectJobOrderPlugin>());
             });
}

}  // namespace gantry
