// Resource vectors, extended-resource name interning and number rendering.
#include "model/resources.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "test_cluster.h"

namespace gantry {
namespace {

// A vector with every component, including two scalar slots, set to distinct values.
Resources Sample() {
  Resources r;
  r.cpu_millis = 1500;
  r.memory_bytes = 2e9;
  r.gpus = 2;
  r.pods = 3;
  r.scalars[0] = 4;
  r.scalars[kMaxScalarResources - 1] = 5;
  return r;
}

class ResourcesTest : public ::testing::Test {};

TEST_F(ResourcesTest, PlusEqualsAddsEveryComponent) {
  Resources a = Sample();
  Resources b;
  b.cpu_millis = 500;
  b.memory_bytes = 1e9;
  b.gpus = 0.5;
  b.pods = 1;
  b.scalars[0] = 1;
  b.scalars[3] = 7;
  a += b;
  EXPECT_EQ(a.cpu_millis, 2000);                     // 1500 + 500
  EXPECT_EQ(a.memory_bytes, 3e9);                    // 2e9 + 1e9
  EXPECT_EQ(a.gpus, 2.5);                            // 2 + 0.5
  EXPECT_EQ(a.pods, 4);                              // 3 + 1
  EXPECT_EQ(a.scalars[0], 5);                        // 4 + 1
  EXPECT_EQ(a.scalars[3], 7);                        // 0 + 7
  EXPECT_EQ(a.scalars[kMaxScalarResources - 1], 5);  // 5 + 0
  for (int i : {1, 2, 4, 5, 6}) EXPECT_EQ(a.scalars[i], 0) << "slot " << i;
}

TEST_F(ResourcesTest, MinusEqualsSubtractsEveryComponentAndMayGoNegative) {
  Resources a = Sample();
  Resources b = Sample();
  b.cpu_millis = 2000;  // more than a has: 1500 - 2000 = -500
  b.scalars[1] = 1;     // 0 - 1 = -1
  a -= b;
  EXPECT_EQ(a.cpu_millis, -500);
  EXPECT_EQ(a.memory_bytes, 0);
  EXPECT_EQ(a.gpus, 0);
  EXPECT_EQ(a.pods, 0);
  EXPECT_EQ(a.scalars[0], 0);
  EXPECT_EQ(a.scalars[1], -1);
  EXPECT_EQ(a.scalars[kMaxScalarResources - 1], 0);
}

TEST_F(ResourcesTest, BinaryOperatorsLeaveOperandsAlone) {
  const Resources a = Sample();
  const Resources b = Sample();
  const Resources sum = a + b;
  const Resources diff = sum - b;
  EXPECT_EQ(sum.cpu_millis, 3000);  // 1500 * 2
  EXPECT_EQ(sum.scalars[0], 8);     // 4 * 2
  EXPECT_EQ(diff, a);
  EXPECT_EQ(a, Sample());
}

TEST_F(ResourcesTest, FitsInWhenEveryComponentIsAtMostCapacity) {
  const Resources cap = Sample();
  EXPECT_TRUE(Resources{}.FitsIn(cap));
  EXPECT_TRUE(cap.FitsIn(cap));  // equal in every component fits
}

TEST_F(ResourcesTest, FitsInFailsOnEachSingleComponent) {
  const Resources cap = Sample();
  struct Case {
    const char* what;
    void (*bump)(Resources&);
  };
  const Case cases[] = {
      {"cpu", [](Resources& r) { r.cpu_millis += 1; }},
      {"memory", [](Resources& r) { r.memory_bytes += 1; }},
      {"gpus", [](Resources& r) { r.gpus += 0.01; }},
      {"pods", [](Resources& r) { r.pods += 1; }},
      {"scalar slot 0", [](Resources& r) { r.scalars[0] += 1; }},
      {"scalar slot 3 (zero capacity)", [](Resources& r) { r.scalars[3] = 1; }},
      {"last scalar slot", [](Resources& r) { r.scalars[kMaxScalarResources - 1] += 1; }},
  };
  for (const Case& c : cases) {
    Resources req = cap;
    c.bump(req);
    EXPECT_FALSE(req.FitsIn(cap)) << c.what;
  }
}

TEST_F(ResourcesTest, FitsInIgnoringGpusSkipsOnlyGpus) {
  const Resources cap = Sample();
  Resources req = cap;
  req.gpus = 100;  // far beyond capacity, ignored
  EXPECT_FALSE(req.FitsIn(cap));
  EXPECT_TRUE(req.FitsInIgnoringGpus(cap));
  req.pods += 1;  // other components still count
  EXPECT_FALSE(req.FitsInIgnoringGpus(cap));
}

TEST_F(ResourcesTest, HasScalarsSeesAnyNonZeroSlot) {
  Resources r;
  EXPECT_FALSE(r.HasScalars());
  r.gpus = 3;
  EXPECT_FALSE(r.HasScalars());
  r.scalars[5] = 1;
  EXPECT_TRUE(r.HasScalars());
}

class ResourceNamesTest : public ::testing::Test {};

TEST_F(ResourceNamesTest, InternAssignsSlotsInOrderAndIsIdempotent) {
  ResourceNames names;
  EXPECT_EQ(names.Intern("nvidia.com/mig-1g.10gb"), 0);
  EXPECT_EQ(names.Intern("vendor.example/fpga"), 1);
  EXPECT_EQ(names.Intern("nvidia.com/mig-1g.10gb"), 0);
  EXPECT_EQ(names.size(), 2);
  EXPECT_EQ(names.Find("vendor.example/fpga"), 1);
  EXPECT_EQ(names.Find("unknown"), -1);
  EXPECT_EQ(names.Name(1), "vendor.example/fpga");
  EXPECT_TRUE(names.IsMig(0));
  EXPECT_FALSE(names.IsMig(1));
}

TEST_F(ResourceNamesTest, InternReturnsMinusOneOnceAllSlotsAreTaken) {
  ResourceNames names;
  for (int i = 0; i < kMaxScalarResources; ++i) {
    EXPECT_EQ(names.Intern("r" + std::to_string(i)), i);
  }
  EXPECT_EQ(names.Intern("one-too-many"), -1);
  EXPECT_EQ(names.size(), kMaxScalarResources);
  EXPECT_EQ(names.Find("one-too-many"), -1);
  // Names interned before the table filled up are still found.
  EXPECT_EQ(names.Intern("r3"), 3);
  EXPECT_EQ(names.Find("r" + std::to_string(kMaxScalarResources - 1)), kMaxScalarResources - 1);
}

// Expected strings below are what Go's fmt "%v" prints for a float64 (strconv 'g', shortest).
class FormatNumberTest : public ::testing::Test {};

TEST_F(FormatNumberTest, IntegersPrintWithoutDecimals) {
  EXPECT_EQ(FormatNumber(0), "0");
  EXPECT_EQ(FormatNumber(3), "3");
  EXPECT_EQ(FormatNumber(-2), "-2");
  EXPECT_EQ(FormatNumber(123456), "123456");  // exponent 5 < 6: plain
}

TEST_F(FormatNumberTest, FractionsUseTheShortestRoundTripForm) {
  EXPECT_EQ(FormatNumber(0.5), "0.5");
  EXPECT_EQ(FormatNumber(0.1), "0.1");  // not 0.10000000000000001
  EXPECT_EQ(FormatNumber(2.75), "2.75");
  EXPECT_EQ(FormatNumber(1.0 / 3), "0.3333333333333333");  // 16 digits round-trip
  EXPECT_EQ(FormatNumber(0.0001), "0.0001");               // exponent -4: still plain
  EXPECT_EQ(FormatNumber(2.5e-05), "2.5e-05");             // exponent -5: %e form
}

TEST_F(FormatNumberTest, HugeAndInfiniteValues) {
  EXPECT_EQ(FormatNumber(1e21), "1e+21");
  EXPECT_EQ(FormatNumber(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatNumber(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST_F(FormatNumberTest, ExponentFormFromOneMillionLikeGo) {
  // Regression (fixed): FormatNumber claims to print like Go's %v, but Go's shortest 'g' switches
  // to the exponent form when the decimal exponent is >= 6 (strconv/ftoa.go: "if precision was the
  // shortest possible, use precision 6 for this decision"), so fmt.Sprintf("%v", 1e6) is
  // "1e+06". FormatNumber prints every integer below 1e21 with "%.0f" ("1000000") and other
  // values with C's %g at the round-trip precision ("1234567.5"). NaN prints "nan", Go "NaN".
  EXPECT_EQ(FormatNumber(1e6), "1e+06");
  EXPECT_EQ(FormatNumber(1234567), "1.234567e+06");
  EXPECT_EQ(FormatNumber(1234567.5), "1.2345675e+06");
  EXPECT_EQ(FormatNumber(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

// Expected strings follow KAI's HumanizeResource: value / divisor with at most three decimals and
// no trailing zeros (go-humanize FtoaWithDigits(v, 3)).
class HumanizeTest : public ::testing::Test {};

TEST_F(HumanizeTest, DividesAndDropsTrailingZeros) {
  EXPECT_EQ(Humanize(1500, 1000), "1.5");  // 1500 m = 1.5 cores
  EXPECT_EQ(Humanize(2e9, 1e9), "2");      // 2e9 bytes = 2 GB, no "2.000"
  EXPECT_EQ(Humanize(250, 1000), "0.25");
  EXPECT_EQ(Humanize(100, 1), "100");  // zeros of the integer part stay
  EXPECT_EQ(Humanize(0, 1), "0");
  EXPECT_EQ(Humanize(1, 3), "0.333");  // 0.3333... keeps three decimals
  EXPECT_EQ(Humanize(4, 1), "4");
}

TEST_F(HumanizeTest, NegativeZeroPrintsAsZero) { EXPECT_EQ(Humanize(-0.0, 1), "0"); }

TEST_F(HumanizeTest, CutsToThreeDecimalsLikeKai) {
  // Regression (fixed): KAI's HumanizeResource is humanize.FtoaWithDigits(v, 3), which formats with
  // six decimals and then *cuts* the string after the third decimal (stripTrailingDigits), so 2/3
  // -> "0.666" and 1.5 GiB (1610612736 bytes) / 1e9 -> "1.61". Humanize rounds with "%.3f" instead
  // ("0.667", "1.611", "17.18" for a 16 GiB node), so messages that mention memory sizes in GiB
  // (MaxNodeResources, OverLimit) differ from KAI's.
  EXPECT_EQ(Humanize(2, 3), "0.666");               // 0.666666 -> cut -> 0.666
  EXPECT_EQ(Humanize(1610612736, 1e9), "1.61");     // 1.610612 -> 1.610 -> 1.61
  EXPECT_EQ(Humanize(17179869184, 1e9), "17.179");  // 17.179869 -> 17.179
  EXPECT_EQ(Humanize(1.9999, 1), "1.999");          // 1.999900 -> 1.999
}

}  // namespace
}  // namespace gantry
