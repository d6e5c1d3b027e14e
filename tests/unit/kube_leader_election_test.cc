// Leader election on a Lease kept by an in-memory fake API server (conditional updates by
// resourceVersion), with candidates sharing one fake clock.
#include <gtest/gtest.h>

#include <limits>

#include "kube/fake_transport.h"
#include "kube/leader_election.h"
#include "kube/time_format.h"

namespace gantry::kube {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr const char* kLeasePath =
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gantry";

// One Lease object with optimistic concurrency, and a switch to make the server fail.
class FakeLeaseServer {
 public:
  HttpResponse Handle(const HttpRequest& r) {
    ++requests;
    if (down)
      return {503,
              json({{"kind", "Status"}, {"code", 503}, {"reason", "ServiceUnavailable"}}).dump()};
    auto status = [](int code, const std::string& reason) {
      return HttpResponse{code,
                          json({{"kind", "Status"}, {"code", code}, {"reason", reason}}).dump()};
    };
    if (r.method == "GET" && r.path == kLeasePath) {
      if (lease.is_null()) return status(404, "NotFound");
      return {200, lease.dump()};
    }
    if (r.method == "POST" &&
        r.path == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases") {
      if (!lease.is_null()) return status(409, "AlreadyExists");
      lease = json::parse(r.body);
      lease["metadata"]["resourceVersion"] = std::to_string(++rv);
      return {201, lease.dump()};
    }
    if (r.method == "PUT" && r.path == kLeasePath) {
      json next = json::parse(r.body);
      if (lease.is_null()) return status(404, "NotFound");
      if (next["metadata"].value("resourceVersion", "") !=
          lease["metadata"]["resourceVersion"].get<std::string>()) {
        return status(409, "Conflict");
      }
      lease = next;
      lease["metadata"]["resourceVersion"] = std::to_string(++rv);
      return {200, lease.dump()};
    }
    return status(400, "BadRequest");
  }

  json lease;
  int rv = 0;
  bool down = false;
  int requests = 0;
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  LeaderElectionTest()
      : transport_(std::make_shared<FakeTransport>()), clock_(std::make_shared<FakeClock>()) {
    transport_->SetHandler([this](const HttpRequest& r) { return server_.Handle(r); });
    ClientOptions o;
    o.qps = 0;
    o.clock = clock_;
    client_ = std::make_shared<Client>(transport_, o);
  }
  LeaderElector Candidate(const std::string& id) {
    LeaderElectionConfig c;
    c.lease_namespace = "kube-system";
    c.lease_name = "gantry";
    c.identity = id;
    EXPECT_TRUE(ValidateLeaderElectionConfig(c).ok());
    return LeaderElector(client_, c, clock_);
  }
  std::string Holder() const { return server_.lease["spec"].value("holderIdentity", ""); }

  FakeLeaseServer server_;
  std::shared_ptr<FakeTransport> transport_;
  std::shared_ptr<FakeClock> clock_;
  std::shared_ptr<Client> client_;
};

TEST_F(LeaderElectionTest, AcquireRenewLoseOnDeadlineAndTakeOverAfterExpiry) {
  LeaderElector a = Candidate("a");
  LeaderElector b = Candidate("b");

  // a creates the lease.
  EXPECT_TRUE(a.TryAcquireOrRenew());
  EXPECT_TRUE(a.IsLeader());
  EXPECT_EQ(Holder(), "a");
  EXPECT_EQ(server_.lease["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(server_.lease["spec"]["renewTime"], FormatMicroTime(clock_->WallNow()));
  EXPECT_EQ(server_.lease["spec"]["acquireTime"], server_.lease["spec"]["renewTime"]);
  EXPECT_EQ(server_.lease["spec"]["leaseTransitions"], 0);

  // b cannot take a held lease.
  EXPECT_FALSE(b.TryAcquireOrRenew());
  EXPECT_EQ(b.holder(), "a");

  // a renews; the renewTime moves.
  clock_->Advance(seconds(2));
  std::string before = server_.lease["spec"]["renewTime"];
  EXPECT_TRUE(a.TryAcquireOrRenew());
  EXPECT_NE(server_.lease["spec"]["renewTime"], before);
  EXPECT_TRUE(ParseTime(server_.lease["spec"]["renewTime"].get<std::string>()).has_value());
  EXPECT_FALSE(b.TryAcquireOrRenew());  // sees the renewed record: the lease is fresh again

  // The API server goes away: a keeps leadership until renew_deadline (10 s) has passed.
  server_.down = true;
  clock_->Advance(seconds(5));
  EXPECT_TRUE(a.TryAcquireOrRenew());
  clock_->Advance(seconds(4));  // 9 s since the last renewal
  EXPECT_TRUE(a.TryAcquireOrRenew());
  clock_->Advance(seconds(1));  // 10 s
  EXPECT_FALSE(a.TryAcquireOrRenew());
  EXPECT_FALSE(a.IsLeader());

  // Back up: the record b saw 10 s ago has not changed; b must wait the full 15 s.
  server_.down = false;
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock_->Advance(seconds(5));  // 15 s after b observed it
  EXPECT_TRUE(b.TryAcquireOrRenew());
  EXPECT_EQ(Holder(), "b");
  EXPECT_EQ(server_.lease["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(server_.lease["spec"]["acquireTime"], server_.lease["spec"]["renewTime"]);

  // a, back, sees b's lease and stays a follower.
  EXPECT_FALSE(a.TryAcquireOrRenew());
  EXPECT_EQ(a.holder(), "b");
}

TEST_F(LeaderElectionTest, LeaderThatSeesAnotherHolderStepsDownAtOnce) {
  LeaderElector a = Candidate("a");
  ASSERT_TRUE(a.TryAcquireOrRenew());
  server_.lease["spec"]["holderIdentity"] = "intruder";  // e.g. a forced takeover
  EXPECT_FALSE(a.TryAcquireOrRenew());
  EXPECT_FALSE(a.IsLeader());
  EXPECT_EQ(Holder(), "intruder");
}

TEST_F(LeaderElectionTest, ReleaseLetsTheNextCandidateInWithoutWaiting) {
  LeaderElector a = Candidate("a");
  LeaderElector b = Candidate("b");
  ASSERT_TRUE(a.TryAcquireOrRenew());
  EXPECT_FALSE(b.TryAcquireOrRenew());
  ApiResult<bool> released = a.Release();
  ASSERT_TRUE(released.ok());
  EXPECT_TRUE(released.value());
  EXPECT_FALSE(a.IsLeader());
  EXPECT_EQ(Holder(), "");
  EXPECT_TRUE(b.TryAcquireOrRenew());  // no clock advance needed
  EXPECT_EQ(server_.lease["spec"]["leaseTransitions"], 1);
}

TEST_F(LeaderElectionTest, StaleWritesConflict) {
  LeaderElector a = Candidate("a");
  ASSERT_TRUE(a.TryAcquireOrRenew());
  int rv_before = server_.rv;
  // Another writer updates the lease between a's read and write: simulated by bumping the
  // version on every GET.
  transport_->SetHandler([this](const HttpRequest& r) {
    HttpResponse resp = server_.Handle(r);
    if (r.method == "GET")
      server_.lease["metadata"]["resourceVersion"] = std::to_string(++server_.rv);
    return resp;
  });
  clock_->Advance(seconds(2));
  EXPECT_TRUE(a.TryAcquireOrRenew());    // the renewal conflicted, but the deadline is not near
  EXPECT_EQ(server_.rv, rv_before + 1);  // only the GET's bump: the PUT was refused
  clock_->Advance(seconds(9));
  EXPECT_FALSE(a.TryAcquireOrRenew());  // 11 s without a successful renewal
}

TEST_F(LeaderElectionTest, MangledLeaseIsTakenOverNotCrashedOn) {
  server_.lease = {{"apiVersion", "coordination.k8s.io/v1"},
                   {"kind", "Lease"},
                   {"metadata", {{"name", "gantry"}, {"resourceVersion", "1"}}},
                   {"spec", "garbage"}};
  server_.rv = 1;
  LeaderElector a = Candidate("a");
  EXPECT_TRUE(a.TryAcquireOrRenew());  // no holder in it: free to take
  EXPECT_EQ(Holder(), "a");

  server_.lease["spec"] = {{"holderIdentity", "b"},
                           {"leaseDurationSeconds", std::numeric_limits<int64_t>::max()},
                           {"renewTime", 42}};
  EXPECT_FALSE(a.TryAcquireOrRenew());  // held by b for a very long time
  clock_->Advance(std::chrono::hours(24 * 400));
  EXPECT_TRUE(a.TryAcquireOrRenew());  // the duration is capped, not overflowed
}

TEST_F(LeaderElectionTest, RunCallsBackAndReleasesOnStop) {
  LeaderElector a = Candidate("a");
  StopSignal stop;
  std::vector<std::string> calls;
  LeaderCallbacks cb;
  cb.on_started_leading = [&] {
    calls.push_back("started");
    stop.Stop();
  };
  cb.on_stopped_leading = [&] { calls.push_back("stopped"); };
  cb.on_new_leader = [&](const std::string& h) { calls.push_back("leader=" + h); };
  a.Run(cb, stop);
  EXPECT_EQ(calls, (std::vector<std::string>{"leader=a", "started", "leader=", "stopped"}));
  EXPECT_EQ(Holder(), "");
  EXPECT_FALSE(a.IsLeader());
}

TEST(LeaderElectionConfigTest, ValidationNamesTheField) {
  LeaderElectionConfig c{"ns", "name", "me"};
  EXPECT_TRUE(ValidateLeaderElectionConfig(c).ok());
  c.identity = "";
  Result<bool> r = ValidateLeaderElectionConfig(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("identity"), std::string::npos);
  c.identity = "me";
  c.renew_deadline = c.lease_duration;
  r = ValidateLeaderElectionConfig(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("lease_duration"), std::string::npos);
}

}  // namespace
}  // namespace gantry::kube
