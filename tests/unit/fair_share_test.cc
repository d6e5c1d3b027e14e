// proportion's fair-share division, on examples worked out by hand.
//
// Every example uses k_value = 1 and no historical usage, so a queue's over-quota weight in a
// round is w = nw + 1 * (nw - 0) = 2 * nw with nw = over_quota_weight / (sum of the weights of
// the queues still asking): the split is proportional to over_quota_weight. Requests are filled by
// hand (the plugin normally sums the pods' requests).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "plugins/proportion/proportion.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using proportion::QueueShare;
using proportion::ResourceShare;

struct ShareSpec {
  double deserved = 0;
  double request = 0;
  double limit = kUnlimited;
  double weight = 1;
};

class FairShareTest : public ::testing::Test {
 protected:
  // Adds a queue whose GPU share is `gpu`; CPU and memory ask for nothing.
  QueueId Add(const std::string& name, ShareSpec gpu, const testutil::QueueSpec& queue = {}) {
    const QueueId q = testutil::AddQueue(cluster_, name, queue);
    specs_[q][QueueResource::kGpu] = gpu;
    return q;
  }
  void SetCpu(QueueId q, ShareSpec cpu) { specs_[q][QueueResource::kCpu] = cpu; }

  // Finalizes the cluster and builds the share table from the specs (fair shares all zero).
  void Prepare() {
    cluster_.Finalize();
    shares_.assign(cluster_.queues.size(), QueueShare{});
    for (auto& [q, by_resource] : specs_) {
      for (auto& [res, spec] : by_resource) {
        ResourceShare& s = shares_[q][res];
        s.deserved = spec.deserved;
        s.request = spec.request;
        s.max_allowed = spec.limit;
        s.over_quota_weight = spec.weight;
      }
    }
  }

  void Compute(double total_gpus, double total_cpu = 0) {
    Prepare();
    Quantities total;
    total[QueueResource::kGpu] = total_gpus;
    total[QueueResource::kCpu] = total_cpu;
    proportion::ComputeFairShares(cluster_, total, /*k_value=*/1, shares_);
  }

  double Gpu(QueueId q) const { return shares_[q][QueueResource::kGpu].fair_share; }
  double Cpu(QueueId q) const { return shares_[q][QueueResource::kCpu].fair_share; }

  Cluster cluster_;
  std::map<QueueId, std::map<QueueResource, ShareSpec>> specs_;
  std::vector<QueueShare> shares_;
};

// (a) Enough capacity: each queue gets its deserved quota, capped by what it requests.
TEST_F(FairShareTest, DeservedQuotasCappedByRequest) {
  const QueueId a = Add("a", {.deserved = 4, .request = 3});
  const QueueId b = Add("b", {.deserved = 5, .request = 5});
  Compute(10);
  EXPECT_EQ(Gpu(a), 3);  // min(deserved 4, request 3)
  EXPECT_EQ(Gpu(b), 5);  // min(5, 5); the 2 GPUs left over are requested by nobody
}

TEST_F(FairShareTest, EachResourceIsDividedOnItsOwn) {
  const QueueId a = Add("a", {.deserved = 4, .request = 3});
  const QueueId b = Add("b", {.deserved = 5, .request = 5});
  SetCpu(a, {.deserved = 2000, .request = 1000});
  SetCpu(b, {.deserved = 3000, .request = 5000});
  Compute(10, 8000);
  EXPECT_EQ(Gpu(a), 3);
  EXPECT_EQ(Gpu(b), 5);
  // CPU: deserved phase a = min(2000, 1000) = 1000, b = min(3000, 5000) = 3000; 4000 left.
  // Over quota only b still asks (2000 more) and gets it: 3000 + 2000 = 5000.
  EXPECT_EQ(Cpu(a), 1000);
  EXPECT_EQ(Cpu(b), 5000);
}

// (b) Over-quota split by weights 2:1 with floor rounding; the left-over unit goes to the largest
// fractional remainder.
TEST_F(FairShareTest, OverQuotaSplitByWeightWithRemainderToLargestFraction) {
  const QueueId a = Add("a", {.deserved = 0, .request = 100, .weight = 2});
  const QueueId b = Add("b", {.deserved = 0, .request = 100, .weight = 1});
  Compute(10);
  // nw: a 2/3, b 1/3 -> w: a 4/3, b 2/3, sum 2. a: 10 * (4/3)/2 = 6.67 -> 6 (remainder 0.67);
  // b: 10 * (2/3)/2 = 3.33 -> 3 (remainder 0.33). 1 unit left -> a (0.67 > 0.33).
  EXPECT_EQ(Gpu(a), 7);
  EXPECT_EQ(Gpu(b), 3);
}

TEST_F(FairShareTest, EqualRemaindersGoToTheOlderQueue) {
  const QueueId a = Add("a", {.deserved = 0, .request = 10}, {.creation_ms = 2000});
  const QueueId b = Add("b", {.deserved = 0, .request = 10}, {.creation_ms = 1000});
  Compute(5);
  // Weights 1:1 -> 2.5 each -> 2 each, remainders 0.5 and 0.5, 1 unit left -> b (older).
  EXPECT_EQ(Gpu(a), 2);
  EXPECT_EQ(Gpu(b), 3);
}

TEST_F(FairShareTest, EqualRemaindersAndAgesGoByName) {
  // Listed (and numbered) beta first, so neither list order nor queue id picks alpha.
  const QueueId beta = Add("beta", {.deserved = 0, .request = 10}, {.creation_ms = 1000});
  const QueueId alpha = Add("alpha", {.deserved = 0, .request = 10}, {.creation_ms = 1000});
  Compute(5);
  EXPECT_EQ(Gpu(alpha), 3);  // 2 + the left-over unit (name "alpha" < "beta")
  EXPECT_EQ(Gpu(beta), 2);
}

TEST_F(FairShareTest, ZeroWeightGetsNothingOverQuota) {
  const QueueId a = Add("a", {.deserved = 0, .request = 10, .weight = 0});
  const QueueId b = Add("b", {.deserved = 0, .request = 10, .weight = 1});
  Compute(10);
  // Weights 0 and 1: b's share of the 10 is 10 * 2/2 = 10, it asks for 10.
  EXPECT_EQ(Gpu(a), 0);
  EXPECT_EQ(Gpu(b), 10);
}

TEST_F(FairShareTest, UnusedShareIsRedistributedInTheNextRound) {
  const QueueId a = Add("a", {.deserved = 0, .request = 2});
  const QueueId b = Add("b", {.deserved = 0, .request = 10});
  Compute(10);
  // Round 1: 5 each offered; a needs only 2, b takes 5 -> 3 left. Round 2: only b asks, 3 more.
  EXPECT_EQ(Gpu(a), 2);
  EXPECT_EQ(Gpu(b), 8);
}

// (c) Priorities: the higher-priority queue is served first from what is left after quotas.
TEST_F(FairShareTest, HigherPriorityReceivesLeftoverFirst) {
  // Lower priority listed first, so list order would favour it.
  const QueueId low = Add("low", {.deserved = 2, .request = 10}, {.priority = 100});
  const QueueId high = Add("high", {.deserved = 2, .request = 5}, {.priority = 200});
  Compute(8);
  // Quotas: 2 + 2, 4 left. Priority 200 first: high alone is offered all 4 and needs 3 -> 5.
  // Then priority 100: low alone is offered the last 1 -> 3.
  EXPECT_EQ(Gpu(high), 5);
  EXPECT_EQ(Gpu(low), 3);
}

TEST_F(FairShareTest, SamePriorityShareTheLeftover) {
  // The same queues as above with equal priorities: the 4 left are split 2 and 2.
  const QueueId low = Add("low", {.deserved = 2, .request = 10});
  const QueueId high = Add("high", {.deserved = 2, .request = 5});
  Compute(8);
  EXPECT_EQ(Gpu(high), 4);
  EXPECT_EQ(Gpu(low), 4);
}

// (d) A limit caps the fair share; what the capped queue cannot take goes to the others.
TEST_F(FairShareTest, LimitCapsTheFairShare) {
  const QueueId a = Add("a", {.deserved = 0, .request = 10, .limit = 3});
  const QueueId b = Add("b", {.deserved = 0, .request = 10});
  Compute(10);
  // Round 1: 5 each offered; a can take only min(limit 3, request 10) = 3, b takes 5. 2 left.
  // Round 2: a is at its limit; b takes the 2 -> 7.
  EXPECT_EQ(Gpu(a), 3);
  EXPECT_EQ(Gpu(b), 7);
}

TEST_F(FairShareTest, LimitBelowDeservedCapsTheDeservedPhase) {
  const QueueId a = Add("a", {.deserved = 5, .request = 10, .limit = 3});
  const QueueId b = Add("b", {.deserved = 0, .request = 10});
  Compute(10);
  // a: min(deserved 5, min(limit 3, request 10)) = 3; b takes the other 7 over quota.
  EXPECT_EQ(Gpu(a), 3);
  EXPECT_EQ(Gpu(b), 7);
}

// (e) Two levels: the children of a department divide the department's fair share.
TEST_F(FairShareTest, ChildrenDivideTheParentsFairShare) {
  const QueueId d = Add("d", {.deserved = 6, .request = 10});
  const QueueId e = Add("e", {.deserved = 4, .request = 1});
  const QueueId l1 = Add("l1", {.deserved = 2, .request = 5}, {.parent = "d"});
  const QueueId l2 = Add("l2", {.deserved = 1, .request = 5}, {.parent = "d"});
  Compute(10);
  // Top level: d = 6, e = min(4, 1) = 1; 3 left, only d asks (4 more) -> offered 3 -> d = 9.
  EXPECT_EQ(Gpu(d), 9);
  EXPECT_EQ(Gpu(e), 1);
  // Inside d (9): l1 = 2, l2 = 1; 6 left split 3 / 3: l1 needs exactly 3 -> 5, l2 takes 3 -> 4.
  // (Dividing the cluster's 10 instead would have given l2 5.)
  EXPECT_EQ(Gpu(l1), 5);
  EXPECT_EQ(Gpu(l2), 4);
  EXPECT_EQ(Gpu(l1) + Gpu(l2), Gpu(d));
}

// (f) An unlimited (-1) quota deserves everything, so the queue gets what it requests.
TEST_F(FairShareTest, UnlimitedQuotaTakesWhatItRequests) {
  const QueueId a = Add("a", {.deserved = kUnlimited, .request = 7});
  const QueueId b = Add("b", {.deserved = 2, .request = 10});
  Compute(10);
  // a: min(total 10, request 7) = 7; b: 2 deserved + the 1 left = 3.
  EXPECT_EQ(Gpu(a), 7);
  EXPECT_EQ(Gpu(b), 3);
}

TEST_F(FairShareTest, DivideAmongSiblingsTouchesOnlyTheListedQueues) {
  const QueueId a = Add("a", {.deserved = 1, .request = 4});
  const QueueId b = Add("b", {.deserved = 1, .request = 4});
  const QueueId c = Add("c", {.deserved = 5, .request = 5});
  Prepare();
  shares_[c][QueueResource::kGpu].fair_share = 42;  // must survive
  Quantities total;
  total[QueueResource::kGpu] = 6;
  proportion::DivideAmongSiblings(cluster_, total, 1, {a, b}, shares_);
  // 1 + 1 deserved, 4 left split 2 / 2 -> 3 each.
  EXPECT_EQ(Gpu(a), 3);
  EXPECT_EQ(Gpu(b), 3);
  EXPECT_EQ(Gpu(c), 42);
}

}  // namespace
}  // namespace gantry
