// Shared by the plugin tests (tests/unit/plugins/<name>_test.cc, one file per folder of
// src/plugins/): every built-in plugin through real sessions running the allocate action. Each
// case is built so that the plugin under test decides the outcome; where it helps, the same
// cluster is scheduled again without the plugin to show the outcome changes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "test_cluster.h"

namespace gantry::plugin_test {

using testutil::AddEmptyJob;
using testutil::AddJob;
using testutil::AddNode;
using testutil::AddPod;
using testutil::AddPodSet;
using testutil::AddQueue;
using testutil::Contains;
using testutil::FitErrors;
using testutil::JobSpec;
using testutil::NodeName;
using testutil::Place;
using testutil::PodOf;
using testutil::PodSpec;
using testutil::RunCycle;
using testutil::WithArguments;
using testutil::Without;

using testutil::kGpuPod;
inline constexpr PodSpec kCpuPod{.gpus = 0, .cpu_millis = 1000, .memory_bytes = 1e9};

// Common shape: one queue "q" without quotas; tests add nodes and jobs.
class PluginTestBase : public ::testing::Test {
 protected:
  void SetUp() override { AddQueue(c_, "q"); }

  // A job of `pods` pods with `spec`, all running on `node`, to fill it.
  JobId Fill(const std::string& name, NodeId node, int pods, PodSpec spec,
             PodStatus status = PodStatus::kRunning) {
    const JobId j = AddJob(c_, name, {.queue = "q", .pods = pods, .pod = spec});
    for (PodId p : c_.jobs[j].pods) Place(c_, p, node, status);
    return j;
  }
  // A single-pod pending job; returns the pod.
  PodId Pending(const std::string& job, PodSpec spec = kGpuPod, int64_t creation_ms = 0) {
    const JobId j = AddJob(c_, job, {.queue = "q", .pod = spec, .creation_ms = creation_ms});
    return PodOf(c_, j, 0);
  }

  Cluster c_;
};

// One GPU free; an elastic job (minimum 1) of two pods: the first pod in task order gets it.
class TaskOrderTest : public PluginTestBase {
 protected:
  void SetUp() override {
    PluginTestBase::SetUp();
    AddNode(c_, "n-a", 1);
    j_ = AddJob(c_, "j", {.queue = "q", .pods = 2, .pod = kGpuPod, .min_available = 1});
    p0_ = PodOf(c_, j_, 0);
    p1_ = PodOf(c_, j_, 1);
  }
  // Which pod got the GPU ("" if none or both).
  std::string Winner(const SchedulerConfig& cfg) {
    c_.Finalize();
    auto cycle = RunCycle(c_, cfg);
    const bool w0 = cycle->pod(p0_).status == PodStatus::kBinding;
    const bool w1 = cycle->pod(p1_).status == PodStatus::kBinding;
    if (w0 == w1) return "";
    return w0 ? c_.pods[p0_].name : c_.pods[p1_].name;
  }
  JobId j_ = kNone;
  PodId p0_ = kNone, p1_ = kNone;
};

}  // namespace gantry::plugin_test
