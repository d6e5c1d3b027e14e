// KAI's time-based fairshare simulator reproduced offline: `gantry simulate` on KAI's simulator
// inputs against the CSVs KAI's simulator wrote for them (tests/data/kai-tbf/, README there).
//
// KAI's simulator is not deterministic: it runs its scheduler, binder and controllers against an
// API server in real time, so the cycle at which a status change shows moves from run to run, and
// which queue's jobs are created first (and so which queue holds the cluster first) follows a Go
// map's random order. Its runs therefore differ from each other, and "within 1% per cycle" of one
// run is not something KAI meets against its own other runs. What is checked here, per case:
//
//  - agreement(X, Y): the share of (cycle, leaf queue) pairs at which X's and Y's allocations
//    differ by at most 1% of the cluster's GPUs, the best over renamings of interchangeable leaf
//    queues (the same parent, priority, quota, weight and jobs; so "which queue went first" does
//    not count);
//  - Gantry, taken as one more run, is no less typical of KAI's runs than KAI's least typical
//    run: Gantry's mean agreement with KAI's runs >= the lowest, over KAI's runs R, of R's mean
//    agreement with KAI's other runs;
//  - each leaf queue's allocation averaged over the run, and the turn lengths where queues take
//    turns, within the range of KAI's runs (give or take 1% of the cluster's GPUs, two cycles).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "kai_csv.h"
#include "sim/kai_time_aware.h"
#include "sim/simulation.h"

#ifndef GANTRY_KAI_TBF_DATA_DIR
#error "GANTRY_KAI_TBF_DATA_DIR must name tests/data/kai-tbf"
#endif

// (A namespace of its own: CI compiles the tests in unity batches, where generic helper names of
// two test files would clash.)
namespace gantry::sim::kai_tbf_reproduction {
namespace {

namespace fs = std::filesystem;

// Per leaf queue, the allocation KAI's CSV (or ours) gives at every cycle 0..cycles-1 (a cycle
// without a row keeps the value before it, 0 at the start).
using AllocationSeries = std::map<std::string, std::vector<double>>;

AllocationSeries SeriesOfCsv(const std::string& csv, const std::vector<std::string>& leaves,
                             int cycles) {
  const kai_csv::KaiRows rows = kai_csv::ParseKaiCsv(csv);
  AllocationSeries out;
  for (const auto& q : leaves) {
    std::vector<double>& s = out[q];
    double last = 0;
    for (int t = 0; t < cycles; ++t) {
      if (auto row = rows.find(t); row != rows.end()) {
        if (auto it = row->second.find(q); it != row->second.end()) last = it->second.first;
      }
      s.push_back(last);
    }
  }
  return out;
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

struct Case {
  std::string name;
  Simulation sim;
  std::vector<std::string> leaves;
  std::vector<int> group;  // per leaf: leaves with the same group are interchangeable
  double cluster_gpus = 0;
  int cycles = 0;
  std::vector<AllocationSeries> kai;  // one per KAI run
  AllocationSeries gantry;
};

// The best agreement over renamings of interchangeable leaves.
double Agreement(const Case& c, const AllocationSeries& x, const AllocationSeries& y) {
  std::vector<size_t> perm(c.leaves.size());
  std::iota(perm.begin(), perm.end(), 0);
  const double tolerance = 0.01 * c.cluster_gpus + 1e-9;
  double best = 0;
  do {
    bool allowed = true;
    for (size_t i = 0; i < perm.size(); ++i) allowed = allowed && c.group[i] == c.group[perm[i]];
    if (!allowed) continue;
    size_t close = 0, all = 0;
    for (size_t i = 0; i < perm.size(); ++i) {
      const auto& a = x.at(c.leaves[i]);
      const auto& b = y.at(c.leaves[perm[i]]);
      for (int t = 0; t < c.cycles; ++t) {
        close += std::abs(a[t] - b[t]) <= tolerance;
        ++all;
      }
    }
    best = std::max(best, static_cast<double>(close) / static_cast<double>(all));
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

// The turns: the cycles between two successive starts of a queue holding every GPU. The first
// entry is the first full turn after the start-up handover (its length depends on how much usage
// the first holder banked before it, the part of KAI's runs that varies most); the later ones are
// the steady turns (the run's end cuts the last one, left out).
std::vector<int> TurnLengths(const Case& c, const AllocationSeries& s) {
  std::vector<int> starts;
  std::string holder;
  for (int t = 0; t < c.cycles; ++t) {
    for (const auto& q : c.leaves) {
      if (q != holder && s.at(q)[t] >= c.cluster_gpus - 1e-9) {
        if (!holder.empty()) starts.push_back(t);
        holder = q;
      }
    }
  }
  std::vector<int> lengths;
  for (size_t i = 1; i < starts.size(); ++i) lengths.push_back(starts[i] - starts[i - 1]);
  return lengths;
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Sorted per-leaf means (sorting makes them independent of which interchangeable queue went first).
std::vector<double> SortedMeans(const Case& c, const AllocationSeries& s) {
  std::vector<double> m;
  m.reserve(c.leaves.size());
  for (const auto& q : c.leaves) m.push_back(Mean(s.at(q)));
  std::sort(m.begin(), m.end());
  return m;
}

// `max_cycles` > 0: only the first that many cycles (the simulation and KAI's runs alike).
Case LoadCase(const std::string& name, int max_cycles = 0) {
  Case c;
  c.name = name;
  const fs::path dir(GANTRY_KAI_TBF_DATA_DIR);
  auto sim = LoadSimulationFile((dir / (name + ".yaml")).string());
  EXPECT_TRUE(sim.ok()) << (sim.ok() ? "" : sim.error());
  if (!sim.ok()) return c;
  c.sim = std::move(sim).value();
  c.cycles =
      static_cast<int>(std::lround(*c.sim.clock.until_seconds - c.sim.clock.usage_start_seconds)) +
      1;
  if (max_cycles > 0 && max_cycles < c.cycles) {
    c.cycles = max_cycles;
    c.sim.clock.until_seconds = c.sim.clock.usage_start_seconds + max_cycles - 1;
  }
  for (const Node& n : c.sim.cluster.nodes) c.cluster_gpus += n.allocatable.gpus;
  // Interchangeable leaves: the same queue fields and the same jobs (count and shape).
  std::map<std::string, std::string> signature;
  for (const Queue& q : c.sim.cluster.queues) {
    if (!q.IsLeaf()) continue;
    c.leaves.push_back(q.name);
    std::ostringstream s;
    s << q.parent_name << '/' << q.priority << '/' << q.gpu.quota << '/' << q.gpu.over_quota_weight;
    signature[q.name] = s.str();
  }
  for (const JobSpec& j : c.sim.jobs) {
    std::ostringstream s;
    s << '|' << j.pods.size() << 'x' << j.pods[0].request.gpus;
    signature[j.job.queue_name] += s.str();
  }
  std::map<std::string, int> ids;
  for (const auto& q : c.leaves) {
    c.group.push_back(ids.emplace(signature[q], static_cast<int>(ids.size())).first->second);
  }
  for (int run = 1;; ++run) {
    const fs::path csv = dir / (name + ".kai-" + std::to_string(run) + ".csv");
    if (!fs::exists(csv)) break;
    c.kai.push_back(SeriesOfCsv(ReadText(csv), c.leaves, c.cycles));
  }
  auto out = Run(c.sim, std::nullopt, std::nullopt);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error());
  if (out.ok()) c.gantry = SeriesOfCsv(KaiTimeAwareCsv(out.value()), c.leaves, c.cycles);
  return c;
}

void CheckAgainstKai(const Case& c, bool turns) {
  ASSERT_GE(c.kai.size(), 2u) << c.name << ": KAI's runs are needed to measure its own spread";
  ASSERT_EQ(c.gantry.size(), c.leaves.size());
  // How typical a run is: its mean agreement with KAI's runs (the others, for one of KAI's).
  // Gantry, taken as one more run, must be no less typical than KAI's least typical run.
  const size_t n = c.kai.size();
  double least_typical = 1;
  double ours = 0;
  for (size_t r = 0; r < n; ++r) {
    double others = 0;
    for (size_t o = 0; o < n; ++o) {
      if (o != r) others += Agreement(c, c.kai[o], c.kai[r]);
    }
    others /= static_cast<double>(n - 1);
    least_typical = std::min(least_typical, others);
    const double with_gantry = Agreement(c, c.gantry, c.kai[r]);
    ours += with_gantry / static_cast<double>(n);
    std::cout << c.name << ": KAI run " << r + 1 << ": agreement with gantry " << with_gantry
              << ", mean with KAI's other runs " << others << "\n";
  }
  std::cout << c.name << ": gantry's mean agreement " << ours << ", KAI's least typical run "
            << least_typical << "\n";
  EXPECT_GE(ours, least_typical) << c.name;
  // Per-leaf means (sorted) within the range of KAI's runs, give or take 1% of the cluster.
  const std::vector<double> means = SortedMeans(c, c.gantry);
  for (size_t i = 0; i < c.leaves.size(); ++i) {
    double lo = 1e18, hi = -1e18;
    for (const auto& k : c.kai) {
      lo = std::min(lo, SortedMeans(c, k)[i]);
      hi = std::max(hi, SortedMeans(c, k)[i]);
    }
    EXPECT_GE(means[i], lo - 0.01 * c.cluster_gpus) << c.name << ", mean of leaf rank " << i;
    EXPECT_LE(means[i], hi + 0.01 * c.cluster_gpus) << c.name << ", mean of leaf rank " << i;
  }
  if (!turns) return;
  // The first turn and the steady ones within KAI's range, give or take two cycles.
  for (const bool first : {true, false}) {
    int lo = 1 << 30, hi = 0;
    for (const auto& k : c.kai) {
      const std::vector<int> lengths = TurnLengths(c, k);
      for (size_t i = 0; i < lengths.size(); ++i) {
        if ((i == 0) != first) continue;
        lo = std::min(lo, lengths[i]);
        hi = std::max(hi, lengths[i]);
      }
    }
    const std::vector<int> mine = TurnLengths(c, c.gantry);
    ASSERT_GE(mine.size(), 2u) << c.name;
    for (size_t i = 0; i < mine.size(); ++i) {
      if ((i == 0) != first) continue;
      EXPECT_GE(mine[i], lo - 2) << c.name << ": turn " << i << " of " << mine[i] << " cycles";
      EXPECT_LE(mine[i], hi + 2) << c.name << ": turn " << i << " of " << mine[i] << " cycles";
    }
  }
}

// KAI's own example: nothing moves, and KAI's runs agree with each other. Every cycle must match.
TEST(KaiTimeAwareReproduction, ExampleConfigEveryCycle) {
  const Case c = LoadCase("example-config");
  ASSERT_FALSE(c.kai.empty());
  for (size_t r = 0; r < c.kai.size(); ++r) {
    EXPECT_EQ(Agreement(c, c.gantry, c.kai[r]), 1.0) << "KAI run " << r + 1;
  }
}

// KAI's env test "3-Way oscillation between queues" (kValue 10, no decay): the first queue to
// hold the node keeps it; the other two are each owed 8 GPUs, never the 16 a job needs. KAI and
// Gantry both settle so within a few cycles (the first 100 cycles are compared, to keep the test
// short; KAI's run stays so to its 1,024th). Which queue holds it is KAI's random creation order.
TEST(KaiTimeAwareReproduction, ThreeWayEveryCycle) {
  const Case c = LoadCase("three-way", 100);
  ASSERT_FALSE(c.kai.empty());
  for (size_t r = 0; r < c.kai.size(); ++r) {
    EXPECT_EQ(Agreement(c, c.gantry, c.kai[r]), 1.0) << "KAI run " << r + 1;
  }
}

TEST(KaiTimeAwareReproduction, TwoQueueOscillation) {
  const Case c = LoadCase("two-queue-oscillation");
  CheckAgainstKai(c, true);
}

TEST(KaiTimeAwareReproduction, ShortWindowNoDecay) {
  const Case c = LoadCase("short-window");
  CheckAgainstKai(c, true);
}

}  // namespace
}  // namespace gantry::sim::kai_tbf_reproduction
