// Kubernetes quantities and the pod-request arithmetic shared by the watch cache, the binder and
// the status controllers (kube/quantity.h).
#include "kube/quantity.h"

#include <gtest/gtest.h>

namespace gantry::kube {
namespace {

using nlohmann::json;

double V(std::string_view text) {
  auto q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << text;
  return q.ok() ? q.value().Value() : -1;
}

TEST(QuantityTest, ParsesKubernetesForms) {
  EXPECT_DOUBLE_EQ(V("500m"), 0.5);
  EXPECT_DOUBLE_EQ(V("100m"), 0.1);
  EXPECT_DOUBLE_EQ(V("4"), 4);
  EXPECT_DOUBLE_EQ(V("1Gi"), 1073741824.0);
  EXPECT_DOUBLE_EQ(V("1.5Ki"), 1536);
  EXPECT_DOUBLE_EQ(V("2k"), 2000);
  EXPECT_DOUBLE_EQ(V("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(V("1e3"), 1000);
  EXPECT_DOUBLE_EQ(V("12e-1"), 1.2);
  EXPECT_DOUBLE_EQ(V("1E3"), 1000);
  EXPECT_DOUBLE_EQ(V("10M"), 1e7);
  EXPECT_DOUBLE_EQ(V("+3"), 3);
  EXPECT_DOUBLE_EQ(V("-2"), -2);
}

TEST(QuantityTest, MalformedTextIsNamedInTheError) {
  for (std::string_view bad : {"", "abc", "1Qi", ".", "Gi", "1GB", "1e", "1.2.3"}) {
    auto q = Quantity::Parse(bad);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_EQ(q.error(), "malformed quantity \"" + std::string(bad) + "\"");
  }
}

TEST(QuantityTest, ExactSumsAndRoundingUpWhenScaled) {
  // Ten times 100m is exactly one core (no floating-point drift).
  Quantity sum;
  for (int i = 0; i < 10; ++i) sum += Quantity::Parse("100m").value();
  EXPECT_EQ(sum, Quantity::Parse("1").value());
  EXPECT_EQ(sum.ToString(), "1");
  EXPECT_EQ(Quantity::Parse("1.0001").value().CeilScaled(1000), 1001);  // millicores, up
  EXPECT_EQ(Quantity::Parse("100m").value().CeilScaled(1), 1);          // whole units, up
  EXPECT_EQ(Quantity::Parse("1n").value().CeilScaled(1000), 1);
  EXPECT_EQ(Quantity::Parse("1e-12").value().nanos(), 1);  // below a nano-unit: rounds up
  EXPECT_EQ(Quantity::Parse("64Gi").value().CeilScaled(1), int64_t{64} << 30);
  EXPECT_EQ(Quantity::Parse("99999999999Ei").value().CeilScaled(1),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Quantity::Parse("250m").value().ToString(), "250m");
  EXPECT_EQ(Quantity::Parse("1Gi").value().ToString(), "1073741824");
  EXPECT_EQ(Quantity::Parse("1500u").value().ToString(), "1500u");
}

TEST(QuantityTest, JsonNumbersAndStrings) {
  EXPECT_DOUBLE_EQ(Quantity::FromJson(json(2)).value().Value(), 2);
  EXPECT_DOUBLE_EQ(Quantity::FromJson(json(0.5)).value().Value(), 0.5);
  EXPECT_DOUBLE_EQ(Quantity::FromJson(json("3Mi")).value().Value(), 3 * 1024 * 1024);
  EXPECT_FALSE(Quantity::FromJson(json::array()).ok());
}

TEST(QuantityTest, ResourceListErrorsNameTheEntry) {
  json list = {{"cpu", "2"}, {"memory", "lots"}};
  auto r = ParseResourceList(&list, "status.allocatable");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "status.allocatable.memory: malformed quantity \"lots\"");
  json negative = {{"cpu", "-1"}};
  auto n = ParseResourceList(&negative, "spec.overhead");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error(), "spec.overhead.cpu: must not be negative");
  EXPECT_TRUE(ParseResourceList(nullptr, "x").value().empty());
}

json Container(const std::string& cpu, const std::string& mem, bool sidecar = false) {
  json c = {{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", mem}}}}}};
  if (sidecar) c["restartPolicy"] = "Always";
  return c;
}

double Req(const ResourceQuantities& r, const std::string& name) {
  auto it = r.find(name);
  return it == r.end() ? 0 : it->second.Value();
}

TEST(PodRequestsTest, AppContainersAreSummed) {
  json spec = {{"containers", {Container("500m", "1Gi"), Container("250m", "512Mi")}}};
  auto r = PodSpecRequests(spec).value();
  EXPECT_DOUBLE_EQ(Req(r, "cpu"), 0.75);
  EXPECT_DOUBLE_EQ(Req(r, "memory"), 1.5 * (1 << 30));
}

TEST(PodRequestsTest, InitContainerMaxRule) {
  // A plain init container runs alone: the pod needs max(sum(app), largest init).
  json spec = {{"containers", {Container("1", "1Gi")}},
               {"initContainers", {Container("3", "256Mi"), Container("2", "2Gi")}}};
  auto r = PodSpecRequests(spec).value();
  EXPECT_DOUBLE_EQ(Req(r, "cpu"), 3);
  EXPECT_DOUBLE_EQ(Req(r, "memory"), 2.0 * (1 << 30));
}

TEST(PodRequestsTest, SidecarsAddToAppAndToLaterInitContainers) {
  // Sidecar (1 cpu) then a plain init container (2 cpu): during init 1 + 2 = 3; afterwards the
  // app (1) runs next to the sidecar: 2. The pod needs 3.
  json spec = {{"containers", {Container("1", "1Gi")}},
               {"initContainers", {Container("1", "100Mi", true), Container("2", "100Mi")}}};
  auto r = PodSpecRequests(spec).value();
  EXPECT_DOUBLE_EQ(Req(r, "cpu"), 3);
  EXPECT_DOUBLE_EQ(Req(r, "memory"), 1024.0 * 1024 * 1024 + 100 * 1024 * 1024);
  // A plain init container before the sidecar does not see it.
  json before = {{"containers", {Container("1", "1Gi")}},
                 {"initContainers", {Container("2", "100Mi"), Container("1", "100Mi", true)}}};
  EXPECT_DOUBLE_EQ(Req(PodSpecRequests(before).value(), "cpu"), 2);
}

TEST(PodRequestsTest, OverheadAndLimitsDefaulting) {
  json c = {{"name", "c"},
            {"resources",
             {{"limits", {{"cpu", "2"}, {"nvidia.com/gpu", "1"}}}, {"requests", {{"cpu", "1"}}}}}};
  json spec = {{"containers", {c}}, {"overhead", {{"cpu", "100m"}, {"memory", "64Mi"}}}};
  auto r = PodSpecRequests(spec).value();
  EXPECT_DOUBLE_EQ(Req(r, "cpu"), 1.1);
  EXPECT_DOUBLE_EQ(Req(r, "nvidia.com/gpu"), 1);  // only a limit: the request defaults to it
  EXPECT_DOUBLE_EQ(Req(r, "memory"), 64.0 * 1024 * 1024);
}

TEST(PodRequestsTest, BadFieldsAreNamed) {
  json spec = {{"containers", {Container("1", "1Gi")}},
               {"initContainers", {Container("1", "1Gi"), Container("x", "1Gi")}}};
  auto r = PodSpecRequests(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "spec.initContainers[1].resources.requests.cpu: malformed quantity \"x\"");
  auto notalist = PodSpecRequests(json{{"containers", "no"}});
  ASSERT_FALSE(notalist.ok());
  EXPECT_EQ(notalist.error(), "spec.containers: must be a list");
}

}  // namespace
}  // namespace gantry::kube
