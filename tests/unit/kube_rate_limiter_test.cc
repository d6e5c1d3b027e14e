// Token-bucket rate limiter and exponential backoff, on a fake clock: no timing assertions, only
// the waits the limiter asks for.
#include <gtest/gtest.h>

#include "kube/rate_limiter.h"

namespace gantry::kube {
namespace {

using std::chrono::milliseconds;

TEST(RateLimiterTest, BurstThenOneTokenPerInterval) {
  auto clock = std::make_shared<FakeClock>();
  RateLimiter limiter(/*qps=*/10, /*burst=*/3, clock);
  EXPECT_TRUE(limiter.TryAccept());
  EXPECT_TRUE(limiter.TryAccept());
  EXPECT_TRUE(limiter.TryAccept());
  EXPECT_FALSE(limiter.TryAccept());  // burst spent
  clock->Advance(milliseconds(99));
  EXPECT_FALSE(limiter.TryAccept());
  clock->Advance(milliseconds(1));  // 100 ms at 10 qps: one token
  EXPECT_TRUE(limiter.TryAccept());
  EXPECT_FALSE(limiter.TryAccept());
  clock->Advance(std::chrono::seconds(60));  // refills only up to the burst
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.TryAccept()) << i;
  EXPECT_FALSE(limiter.TryAccept());
}

TEST(RateLimiterTest, ReserveQueuesWaitersInOrder) {
  auto clock = std::make_shared<FakeClock>();
  RateLimiter limiter(/*qps=*/4, /*burst=*/2, clock);
  EXPECT_EQ(limiter.Reserve(), Clock::Duration::zero());
  EXPECT_EQ(limiter.Reserve(), Clock::Duration::zero());
  EXPECT_EQ(limiter.Reserve(), milliseconds(250));
  EXPECT_EQ(limiter.Reserve(), milliseconds(500));  // behind the previous waiter
  clock->Advance(milliseconds(500));                // both promised tokens now arrived
  EXPECT_EQ(limiter.Reserve(), milliseconds(250));
}

TEST(RateLimiterTest, AcceptSleepsOnTheClockAndStops) {
  auto clock = std::make_shared<FakeClock>();
  RateLimiter limiter(/*qps=*/2, /*burst=*/1, clock);
  EXPECT_TRUE(limiter.Accept());
  EXPECT_TRUE(limiter.Accept());
  EXPECT_EQ(clock->sleeps(), std::vector<Clock::Duration>{milliseconds(500)});
  StopSignal stop;
  stop.Stop();
  EXPECT_FALSE(limiter.Accept(&stop));
}

TEST(RateLimiterTest, ZeroQpsDisablesLimiting) {
  auto clock = std::make_shared<FakeClock>();
  RateLimiter limiter(0, 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(limiter.TryAccept());
  EXPECT_EQ(limiter.Reserve(), Clock::Duration::zero());
}

TEST(BackoffTest, DelayDoublesFromTheInitialUpToTheCap) {
  const BackoffPolicy p{std::chrono::seconds(1), std::chrono::seconds(5), 2.0, 0.0};
  EXPECT_EQ(BackoffDelay(p, 1), std::chrono::seconds(1));
  EXPECT_EQ(BackoffDelay(p, 2), std::chrono::seconds(2));
  EXPECT_EQ(BackoffDelay(p, 3), std::chrono::seconds(4));
  EXPECT_EQ(BackoffDelay(p, 4), std::chrono::seconds(5));
  EXPECT_EQ(BackoffDelay(p, 1000), std::chrono::seconds(5));  // the exponent stops, no overflow
  EXPECT_EQ(BackoffDelay(p, 0), std::chrono::seconds(1));
}

TEST(BackoffTest, NextWithoutJitterFollowsBackoffDelay) {
  const BackoffPolicy p{milliseconds(100), std::chrono::seconds(30), 2.0, 0.0};
  Backoff b(p, 7);
  for (int attempt = 1; attempt <= 20; ++attempt) {
    EXPECT_EQ(b.Next(), BackoffDelay(p, attempt)) << "attempt " << attempt;
  }
}

TEST(BackoffTest, GrowsToTheCapWithJitterAndResets) {
  BackoffPolicy p;
  p.initial = milliseconds(100);
  p.max = milliseconds(1000);
  p.factor = 2;
  p.jitter = 0.25;
  Backoff b(p, /*seed=*/7);
  const int bases[] = {100, 200, 400, 800, 1000, 1000};
  std::vector<Clock::Duration> seen;
  for (int base : bases) {
    Clock::Duration d = b.Next();
    EXPECT_GE(d, milliseconds(base));
    EXPECT_LT(d, std::chrono::microseconds(base * 1250));
    seen.push_back(d);
  }
  EXPECT_NE(seen[4], seen[5]);  // same base, different jitter
  b.Reset();
  Clock::Duration d = b.Next();
  EXPECT_GE(d, milliseconds(100));
  EXPECT_LT(d, milliseconds(125));

  Backoff same(p, 7);  // deterministic for a seed
  EXPECT_EQ(same.Next(), seen[0]);
}

}  // namespace
}  // namespace gantry::kube
