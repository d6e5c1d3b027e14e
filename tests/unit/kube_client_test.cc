// The API client through a fake transport: request paths, bodies and content types for every
// verb, pagination, and decoding of Kubernetes Status errors.
#include <gtest/gtest.h>

#include "kube/client.h"
#include "kube/events.h"
#include "kube/fake_transport.h"
#include "kube/time_format.h"

namespace gantry::kube {
namespace {

using nlohmann::json;

HttpResponse Json(int status, const json& body) { return HttpResponse{status, body.dump()}; }

json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
          {"code", code},     {"reason", reason},   {"message", message}};
}

class KubeClientTest : public ::testing::Test {
 protected:
  KubeClientTest() : transport_(std::make_shared<FakeTransport>()) {
    ClientOptions o;
    o.qps = 0;  // unlimited: these tests are about requests, not pacing
    client_ = std::make_shared<Client>(transport_, o);
  }
  HttpRequest Last() const { return transport_->requests().back(); }

  std::shared_ptr<FakeTransport> transport_;
  std::shared_ptr<Client> client_;
};

TEST(ResourceTypeTest, PathsForCoreGroupedNamespacedAndClusterScoped) {
  EXPECT_EQ(resources::kPods.ObjectPath("ns1", "p", "binding"),
            "/api/v1/namespaces/ns1/pods/p/binding");
  EXPECT_EQ(resources::kPods.CollectionPath(""), "/api/v1/pods");
  EXPECT_EQ(resources::kNodes.ObjectPath("ignored", "n1", "status"), "/api/v1/nodes/n1/status");
  EXPECT_EQ(resources::kLeases.ObjectPath("kube-system", "l"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l");
  EXPECT_EQ(resources::kQueues.CollectionPath("x"), "/apis/scheduling.run.ai/v2/queues");
  EXPECT_EQ(resources::kPodGroups.CollectionPath("team"),
            "/apis/scheduling.run.ai/v2alpha2/namespaces/team/podgroups");
  EXPECT_EQ(resources::kBindRequests.ObjectPath("team", "b"),
            "/apis/scheduling.run.ai/v1alpha2/namespaces/team/bindrequests/b");
  EXPECT_EQ(resources::kTopologies.ObjectPath("", "t"),
            "/apis/kai.scheduler/v1alpha1/topologies/t");
  EXPECT_EQ(resources::kPodGroups.ApiVersion(), "scheduling.run.ai/v2alpha2");
  EXPECT_EQ(resources::kPods.ApiVersion(), "v1");
  EXPECT_EQ(UrlEncode("a=b,c!=d e/f"), "a%3Db%2Cc%21%3Dd%20e%2Ff");
}

TEST(StatusErrorTest, DecodesKubernetesStatusAndPlainBodies) {
  ApiError conflict =
      DecodeStatusError(409, StatusBody(409, "Conflict", "the object has been modified").dump());
  EXPECT_EQ(conflict.http_status, 409);
  EXPECT_EQ(conflict.reason, "Conflict");
  EXPECT_EQ(conflict.message, "the object has been modified");
  EXPECT_TRUE(conflict.IsConflict());
  EXPECT_FALSE(conflict.IsAlreadyExists());
  EXPECT_EQ(conflict.ToString(), "HTTP 409 Conflict: the object has been modified");

  ApiError exists = DecodeStatusError(409, StatusBody(409, "AlreadyExists", "exists").dump());
  EXPECT_TRUE(exists.IsAlreadyExists());
  EXPECT_FALSE(exists.IsConflict());

  ApiError expired = DecodeStatusError(0, StatusBody(410, "Expired", "too old").dump());
  EXPECT_EQ(expired.http_status, 410);  // taken from Status.code (watch ERROR events)
  EXPECT_TRUE(expired.IsGone());

  ApiError missing = DecodeStatusError(404, StatusBody(404, "NotFound", "pods \"x\"").dump());
  EXPECT_TRUE(missing.IsNotFound());

  ApiError plain = DecodeStatusError(502, "<html>bad gateway</html>");
  EXPECT_EQ(plain.http_status, 502);
  EXPECT_EQ(plain.reason, "");
  EXPECT_EQ(plain.message, "<html>bad gateway</html>");
  EXPECT_TRUE(plain.IsServerError());

  ApiError empty = DecodeStatusError(500, "");
  EXPECT_EQ(empty.message, "empty response body");
}

TEST_F(KubeClientTest, GetReturnsTheObjectOrTheStatusError) {
  transport_->PushResponse(Json(200, {{"metadata", {{"name", "p"}, {"uid", "u1"}}}}));
  transport_->PushResponse(Json(404, StatusBody(404, "NotFound", "pods \"q\" not found")));
  transport_->PushResponse(HttpResponse{200, "{not json"});

  ApiResult<Object> p = client_->Get(resources::kPods, "ns", "p");
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_EQ(UidOf(p.value()), "u1");
  EXPECT_EQ(Last().method, "GET");
  EXPECT_EQ(Last().path, "/api/v1/namespaces/ns/pods/p");

  ApiResult<Object> q = client_->Get(resources::kPods, "ns", "q");
  ASSERT_FALSE(q.ok());
  EXPECT_TRUE(q.error().IsNotFound());
  EXPECT_EQ(q.error().message, "pods \"q\" not found");

  ApiResult<Object> bad = client_->Get(resources::kPods, "ns", "r");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().http_status, 200);
  EXPECT_NE(bad.error().message.find("not a JSON object"), std::string::npos);

  ApiResult<Object> invalid = client_->Get(resources::kPods, "ns", "a/b");
  ASSERT_FALSE(invalid.ok());
  EXPECT_TRUE(invalid.error().IsInvalidRequest());  // never sent
  EXPECT_FALSE(invalid.error().IsTransport());
  EXPECT_EQ(invalid.error().ToString().rfind("invalid request: get pods", 0), 0u)
      << invalid.error().ToString();
  EXPECT_EQ(transport_->requests().size(), 3u);
}

TEST_F(KubeClientTest, ListAllFollowsContinueTokensWithSelectors) {
  transport_->PushResponse(Json(200, {{"kind", "PodList"},
                                      {"metadata", {{"resourceVersion", "7"}, {"continue", "c1"}}},
                                      {"items", {{{"metadata", {{"name", "a"}}}}}}}));
  transport_->PushResponse(Json(200, {{"kind", "PodList"},
                                      {"metadata", {{"resourceVersion", "7"}, {"continue", "c/2"}}},
                                      {"items", {{{"metadata", {{"name", "b"}}}}}}}));
  transport_->PushResponse(Json(200, {{"kind", "PodList"},
                                      {"metadata", {{"resourceVersion", "7"}}},
                                      {"items", {{{"metadata", {{"name", "c"}}}}}}}));
  ListOptions o;
  o.limit = 1;
  o.label_selector = "kai.scheduler/queue=q1";
  o.field_selector = "spec.nodeName=";
  ApiResult<Object> all = client_->ListAll(resources::kPods, "", o);
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  ASSERT_EQ(all.value()["items"].size(), 3u);
  EXPECT_EQ(NameOf(all.value()["items"][2]), "c");
  EXPECT_EQ(all.value()["metadata"]["resourceVersion"], "7");
  EXPECT_FALSE(all.value()["metadata"].contains("continue"));
  EXPECT_EQ(all.value()["kind"], "PodList");

  std::vector<HttpRequest> reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].path,
            "/api/v1/pods?labelSelector=kai.scheduler%2Fqueue%3Dq1&fieldSelector=spec.nodeName%3D"
            "&limit=1");
  EXPECT_NE(reqs[1].path.find("&continue=c1"), std::string::npos) << reqs[1].path;
  EXPECT_NE(reqs[2].path.find("&continue=c%2F2"), std::string::npos) << reqs[2].path;
}

TEST_F(KubeClientTest, ListAllReportsAnExpiredContinueToken) {
  transport_->PushResponse(Json(200, {{"metadata", {{"resourceVersion", "7"}, {"continue", "c"}}},
                                      {"items", json::array()}}));
  transport_->PushResponse(Json(410, StatusBody(410, "Expired", "continue token too old")));
  ApiResult<Object> all = client_->ListAll(resources::kPods, "ns", {});
  ASSERT_FALSE(all.ok());
  EXPECT_TRUE(all.error().IsGone());
}

TEST_F(KubeClientTest, WritesUseTheRightVerbsPathsAndContentTypes) {
  for (int i = 0; i < 7; ++i) transport_->PushResponse(Json(200, {{"kind", "X"}}));
  json pod = {{"metadata", {{"name", "p"}, {"resourceVersion", "5"}}}};

  ASSERT_TRUE(client_->Create(resources::kPods, "ns", pod).ok());
  EXPECT_EQ(Last().method, "POST");
  EXPECT_EQ(Last().path, "/api/v1/namespaces/ns/pods");
  EXPECT_EQ(Last().content_type, "application/json");
  EXPECT_EQ(json::parse(Last().body), pod);

  ASSERT_TRUE(client_->Update(resources::kPods, "ns", pod).ok());
  EXPECT_EQ(Last().method, "PUT");
  EXPECT_EQ(Last().path, "/api/v1/namespaces/ns/pods/p");

  ASSERT_TRUE(client_->UpdateStatus(resources::kNodes, "", {{"metadata", {{"name", "n"}}}}).ok());
  EXPECT_EQ(Last().path, "/api/v1/nodes/n/status");

  ASSERT_TRUE(client_
                  ->Patch(resources::kPods, "ns", "p", PatchType::kMerge,
                          {{"metadata", {{"labels", {{"a", "b"}}}}}})
                  .ok());
  EXPECT_EQ(Last().method, "PATCH");
  EXPECT_EQ(Last().content_type, "application/merge-patch+json");

  json ops = json::array({{{"op", "add"}, {"path", "/metadata/labels/x"}, {"value", "y"}}});
  ASSERT_TRUE(
      client_->Patch(resources::kPodGroups, "ns", "pg", PatchType::kJson, ops, "status").ok());
  EXPECT_EQ(Last().content_type, "application/json-patch+json");
  EXPECT_EQ(Last().path, "/apis/scheduling.run.ai/v2alpha2/namespaces/ns/podgroups/pg/status");
  EXPECT_EQ(json::parse(Last().body), ops);

  DeleteOptions d;
  d.grace_period_seconds = 0;
  d.precondition_uid = "u1";
  d.precondition_resource_version = "9";
  d.propagation_policy = "Background";
  ASSERT_TRUE(client_->Delete(resources::kPods, "ns", "p", d).ok());
  EXPECT_EQ(Last().method, "DELETE");
  json body = json::parse(Last().body);
  EXPECT_EQ(body["gracePeriodSeconds"], 0);
  EXPECT_EQ(body["preconditions"]["uid"], "u1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "9");
  EXPECT_EQ(body["propagationPolicy"], "Background");

  ASSERT_TRUE(client_->BindPod("ns", "p", "node-1", "u1").ok());
  EXPECT_EQ(Last().method, "POST");
  EXPECT_EQ(Last().path, "/api/v1/namespaces/ns/pods/p/binding");
  json binding = json::parse(Last().body);
  EXPECT_EQ(binding["kind"], "Binding");
  EXPECT_EQ(binding["target"]["name"], "node-1");
  EXPECT_EQ(binding["target"]["kind"], "Node");
  EXPECT_EQ(binding["metadata"]["uid"], "u1");
}

// Responses of the wrong shape are errors, never exceptions or crashes.
TEST_F(KubeClientTest, OddlyShapedResponsesAreErrors) {
  transport_->PushResponse(HttpResponse{200, "[1, 2]"});
  ApiResult<Object> arr = client_->Get(resources::kPods, "ns", "p");
  ASSERT_FALSE(arr.ok());
  EXPECT_NE(arr.error().message.find("not a JSON object"), std::string::npos);

  // A continue token of the wrong type ends the pagination instead of throwing.
  transport_->PushResponse(
      Json(200, {{"metadata", {{"resourceVersion", 5}, {"continue", 7}}}, {"items", {}}}));
  ApiResult<Object> list = client_->ListAll(resources::kPods, "ns", {});
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  EXPECT_EQ(ResourceVersionOf(list.value()), "");

  transport_->PushResponse(Json(200, {{"items", "nope"}}));
  ApiResult<Object> bad_items = client_->ListAll(resources::kPods, "ns", {});
  ASSERT_FALSE(bad_items.ok());
  EXPECT_NE(bad_items.error().message.find("\"items\""), std::string::npos);

  ApiError odd = DecodeStatusError(500, json({{"kind", 5}, {"reason", 1}}).dump());
  EXPECT_EQ(odd.http_status, 500);
  EXPECT_EQ(odd.reason, "");

  EXPECT_EQ(StringAt(json({{"spec", {{"nodeName", "n1"}}}}), {"spec", "nodeName"}), "n1");
  EXPECT_EQ(StringAt(json({{"spec", 3}}), {"spec", "nodeName"}), "");
  EXPECT_EQ(StringAt(json::array(), {"metadata", "name"}), "");
}

TEST(ClientRetryTest, RetryAfterIsHonouredWithinLimits) {
  auto transport = std::make_shared<FakeTransport>();
  auto clock = std::make_shared<FakeClock>();
  ClientOptions o;
  o.qps = 0;
  o.clock = clock;
  o.max_retries = 2;
  o.max_retry_after = std::chrono::seconds(5);
  Client client(transport, o);
  json busy = StatusBody(429, "TooManyRequests", "too many requests");
  // 429 twice (the second asks for 60 s: capped at 5), then success.
  transport->PushResponse(HttpResponse{429, busy.dump(), 1});
  transport->PushResponse(HttpResponse{429, busy.dump(), 60});
  transport->PushResponse(Json(200, {{"metadata", {{"name", "p"}}}}));
  ApiResult<Object> got = client.Get(resources::kPods, "ns", "p");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(clock->sleeps(),
            (std::vector<Clock::Duration>{std::chrono::seconds(1), std::chrono::seconds(5)}));

  // Out of retries: the last 429 is returned.
  for (int i = 0; i < 3; ++i) transport->PushResponse(HttpResponse{429, busy.dump(), 0});
  ApiResult<Object> exhausted = client.Get(resources::kPods, "ns", "p");
  ASSERT_FALSE(exhausted.ok());
  EXPECT_TRUE(exhausted.error().IsTooManyRequests());
  EXPECT_EQ(transport->requests().size(), 6u);

  // A 503 with Retry-After is retried for GET but not for a create (it may have been applied).
  transport->PushResponse(HttpResponse{503, "{}", 1});
  ApiResult<Object> created =
      client.Create(resources::kPods, "ns", {{"metadata", {{"name", "q"}}}});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().http_status, 503);
  EXPECT_EQ(transport->requests().size(), 7u);
  // Without Retry-After nothing is retried.
  transport->PushResponse(HttpResponse{429, busy.dump()});
  EXPECT_FALSE(client.Get(resources::kPods, "ns", "p").ok());
  EXPECT_EQ(transport->requests().size(), 8u);
}

TEST_F(KubeClientTest, BadArgumentsFailBeforeSending) {
  ApiResult<Object> no_name = client_->Create(resources::kPods, "ns", {{"spec", {}}});
  ASSERT_FALSE(no_name.ok());
  EXPECT_TRUE(no_name.error().IsInvalidRequest());
  EXPECT_NE(no_name.error().message.find("metadata.name"), std::string::npos);
  EXPECT_FALSE(client_->Create(resources::kPods, "", {{"metadata", {{"name", "p"}}}}).ok());
  EXPECT_FALSE(client_->Update(resources::kPods, "ns", json::object()).ok());
  ApiResult<Object> p =
      client_->Patch(resources::kPods, "ns", "p", PatchType::kJson, {{"op", "add"}});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("must be an array"), std::string::npos);
  EXPECT_FALSE(client_->BindPod("ns", "p", "").ok());
  EXPECT_TRUE(transport_->requests().empty());

  // Invalid UTF-8 in a label is sent replaced, not thrown.
  transport_->PushResponse(Json(201, {{"kind", "Pod"}}));
  ApiResult<Object> odd = client_->Create(
      resources::kPods, "ns", {{"metadata", {{"name", "p"}, {"labels", {{"a", "\xff"}}}}}});
  ASSERT_TRUE(odd.ok()) << odd.error().ToString();
  EXPECT_EQ(json::parse(Last().body)["metadata"]["labels"]["a"], "\xef\xbf\xbd");
}

TEST_F(KubeClientTest, ConflictAndAlreadyExistsAreDistinguished) {
  transport_->PushResponse(Json(409, StatusBody(409, "AlreadyExists", "pods \"p\" exists")));
  transport_->PushResponse(Json(409, StatusBody(409, "Conflict", "Precondition failed: UID")));
  ApiResult<Object> c = client_->Create(resources::kPods, "ns", {{"metadata", {{"name", "p"}}}});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.error().IsAlreadyExists());
  DeleteOptions d;
  d.precondition_uid = "wrong";
  ApiResult<Object> del = client_->Delete(resources::kPods, "ns", "p", d);
  ASSERT_FALSE(del.ok());
  EXPECT_TRUE(del.error().IsConflict());
  EXPECT_NE(del.error().message.find("Precondition"), std::string::npos);
}

TEST(CurlTransportTest, ConnectionRefusedIsATransportErrorNamingTheUrl) {
  Config cfg;
  cfg.server = "https://127.0.0.1:1";  // nothing listens on port 1
  cfg.source = "test";
  ApiResult<std::shared_ptr<Client>> client = Client::FromConfig(cfg);
  ASSERT_TRUE(client.ok()) << client.error().ToString();
  ApiResult<Object> got = client.value()->Get(resources::kNodes, "", "n1");
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(got.error().IsTransport()) << got.error().ToString();
  EXPECT_NE(got.error().message.find("https://127.0.0.1:1/api/v1/nodes/n1"), std::string::npos)
      << got.error().message;
}

TEST(EventTest, MakeEventReferencesTheObject) {
  json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u1"}, {"resourceVersion", "3"}}}};
  auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000)) +
             std::chrono::microseconds(250);
  Object ev = MakeEvent(resources::kPods, pod,
                        {"Warning", "FailedScheduling", "0/3 nodes", "kai-scheduler", "s-0"}, now);
  EXPECT_EQ(ev["metadata"]["namespace"], "ns");
  EXPECT_EQ(ev["involvedObject"]["kind"], "Pod");
  EXPECT_EQ(ev["involvedObject"]["uid"], "u1");
  EXPECT_EQ(ev["involvedObject"]["apiVersion"], "v1");
  EXPECT_EQ(ev["reason"], "FailedScheduling");
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_EQ(ev["source"]["component"], "kai-scheduler");
  EXPECT_EQ(ev["firstTimestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(NameOf(ev).rfind("p.", 0), 0u);

  json node = {{"metadata", {{"name", "n1"}}}};
  Object nev = MakeEvent(resources::kNodes, node, {"Normal", "R", "m", "c", ""}, now);
  EXPECT_EQ(nev["metadata"]["namespace"], "default");
  EXPECT_FALSE(nev["involvedObject"].contains("namespace"));
  EXPECT_NE(
      NameOf(nev),
      NameOf(Object(MakeEvent(resources::kNodes, node, {}, now + std::chrono::nanoseconds(1000)))));
}

TEST(TimeFormatTest, MicroTimeRoundTrips) {
  auto t = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000)) +
           std::chrono::microseconds(123456);
  EXPECT_EQ(FormatMicroTime(t), "2023-11-14T22:13:20.123456Z");
  EXPECT_EQ(FormatTime(t), "2023-11-14T22:13:20Z");
  auto parsed = ParseTime("2023-11-14T22:13:20.123456Z");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, t);
  EXPECT_EQ(ParseTime("2023-11-14T22:13:20Z"),
            std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000)));
  EXPECT_FALSE(ParseTime("2023-11-14 22:13:20Z").has_value());
  // RFC 3339 offsets are honoured (Kubernetes writes "Z", other clients may not).
  EXPECT_EQ(ParseTime("2023-11-14T23:13:20+01:00"), ParseTime("2023-11-14T22:13:20Z"));
  EXPECT_FALSE(ParseTime("garbage").has_value());
  EXPECT_FALSE(ParseTime("2023-11-14T22:13:20.Z").has_value());
  EXPECT_FALSE(ParseTime("+023-11-14T22:13:20Z").has_value());
  EXPECT_FALSE(ParseTime("2023-13-14T22:13:20Z").has_value());
  // Every second of the calendar the way gmtime writes it (leap years, centuries) reads back.
  for (int64_t secs = -86400LL * 365 * 3; secs < 86400LL * 365 * 140; secs += 86400 * 7 + 3613) {
    auto tp = std::chrono::system_clock::time_point(std::chrono::seconds(secs));
    ASSERT_EQ(ParseTime(FormatTime(tp)), tp) << FormatTime(tp);
  }
  // As timegm: past the month's end rolls over.
  EXPECT_EQ(ParseTime("2023-02-30T00:00:00Z"), ParseTime("2023-03-02T00:00:00Z"));
}

}  // namespace
}  // namespace gantry::kube
