// The shared-GPU counters (framework/gpu_sharing.h) against KAI v0.17's own NodeInfo over random
// walks: tests/data/kai-gpu-sharing/trace.txt was written by KAI's node_info package running
// tools/kai-gpu-sharing-probe (60 nodes of 2-5 GPUs, 40 steps each: pods added as running,
// releasing or pipelined - whole GPUs, or a quarter, half or three quarters of a device on one of
// a few groups -, pods removed, and status changes as KAI's Statement makes them, RemoveTask with
// the old status and AddTask with the new one), with the node's idle and releasing GPUs after
// every add and remove. Replayed here the way Session::AddPodToNode / RemovePodFromNode charge a
// pod (whole GPUs on the node's used / idle / releasing, then the shared devices), every counter
// must be KAI's, including the evictions and undos that do not come back to where they started.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "framework/gpu_sharing.h"

namespace gantry {
namespace {

struct KaiTraceReplay {
  NodeSharedGpus shared;
  int gpus = 0;
  double idle = 0;
  double releasing = 0;
  double used = 0;  // GPUs of whole-GPU pods

  // One trace line's add or remove of a pod with `status`: `whole` GPUs, or `memory` MiB of a
  // 100 MiB device on `group`.
  void Apply(bool add, bool shared_pod, PodStatus status, int amount, int group) {
    const double sign = add ? 1 : -1;
    const double whole = shared_pod ? 0 : amount;
    used += sign * whole;
    if (status == PodStatus::kReleasing) {
      releasing += sign * whole;
      idle -= sign * whole;
    } else if (status == PodStatus::kPipelined) {
      releasing -= sign * whole;
    } else {
      idle -= sign * whole;
    }
    if (!shared_pod) return;
    if (add) {
      shared.Add(group, amount, status, gpus, used, idle, releasing);
    } else {
      shared.Remove(group, amount, status, gpus, used, idle, releasing);
    }
  }
};

PodStatus KaiTraceStatus(const std::string& s) {
  if (s == "releasing") return PodStatus::kReleasing;
  if (s == "pipelined") return PodStatus::kPipelined;
  return PodStatus::kRunning;
}

TEST(SharedGpuKaiTrace, EveryCounterAsKaisNodeInfo) {
  std::ifstream in(std::string(GANTRY_KAI_GPU_SHARING_DATA_DIR) + "/trace.txt");
  ASSERT_TRUE(in.good());
  KaiTraceReplay node;
  int walk = -1;
  int operations = 0;
  int differing = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string op;
    fields >> op;
    if (op == "node") {
      fields >> walk >> node.gpus;
      node = KaiTraceReplay{NodeSharedGpus{}, node.gpus, static_cast<double>(node.gpus), 0, 0};
      continue;
    }
    int pod = 0;
    int amount = 0;
    int group = 0;
    std::string kind;
    std::string status;
    double kai_idle = 0;
    double kai_releasing = 0;
    fields >> pod >> kind >> status >> amount >> group >> kai_idle >> kai_releasing;
    ASSERT_FALSE(fields.fail()) << line;
    node.Apply(op == "add", kind == "shared", KaiTraceStatus(status), amount, group);
    ++operations;
    if (node.idle != kai_idle || node.releasing != kai_releasing) {
      ADD_FAILURE() << "walk " << walk << ", after \"" << line << "\": idle " << node.idle
                    << ", releasing " << node.releasing;
      ++differing;
      node.idle = kai_idle;
      node.releasing = kai_releasing;
    }
  }
  EXPECT_EQ(differing, 0);
  EXPECT_GT(operations, 2000);
}

}  // namespace
}  // namespace gantry
