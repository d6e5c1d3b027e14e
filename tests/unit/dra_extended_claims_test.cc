// DRA-backed extended resources (KEP-5004) end to end in the live model: a DeviceClass's
// spec.extendedResourceName (and every class's implicit deviceclass.resource.kubernetes.io/<name>)
// converted and checked, a pod's extended-resource requests turned into the special claim's
// device requests and container mappings, the dynamicresources plugin giving the pod devices on a
// node without a device plugin for the resource, and the BindRequest carrying them
// (spec.extendedResourceClaimAllocation). The binder's side is in binder_steps_test.cc.
#include <gtest/gtest.h>

#include "actions/builtin.h"
#include "cache/convert.h"
#include "cache/watch_cache.h"
#include "framework/fit_errors.h"
#include "framework/session.h"
#include "live/decisions.h"
#include "plugins/builtin.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"

namespace gantry::cache {
// A namespace of its own: its object builders take other arguments than the same-named ones of
// the other watch-cache tests, which a unity build compiles in the same unit.
namespace extended_claims_test {
namespace {

using kube::EventType;
using nlohmann::json;

constexpr const char* kAccel = "example.com/accel";
constexpr const char* kDriver = "accel.example.com";

json DeviceClassObj(const std::string& name, const std::string& extended_resource_name,
                    const std::string& created = "2026-01-01T00:00:00Z") {
  json c{{"metadata", {{"name", name}, {"creationTimestamp", created}}},
         {"spec",
          {{"selectors", json::array({{{"cel",
                                        {{"expression", std::string("device.driver == \"") +
                                                            kDriver + "\""}}}}})}}}};
  if (!extended_resource_name.empty()) c["spec"]["extendedResourceName"] = extended_resource_name;
  return c;
}

json SliceObj(const std::string& node, int devices) {
  json s{{"metadata", {{"name", node + "-accels"}}},
         {"spec",
          {{"driver", kDriver},
           {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
           {"nodeName", node},
           {"devices", json::array()}}}};
  for (int i = 0; i < devices; ++i) {
    s["spec"]["devices"].push_back({{"name", "accel-" + std::to_string(i)}});
  }
  return s;
}

json NodeObj(const std::string& name, int plugin_accels = 0) {
  json n{{"metadata", {{"name", name}}},
         {"status", {{"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}}}}}};
  if (plugin_accels > 0) n["status"]["allocatable"][kAccel] = std::to_string(plugin_accels);
  return n;
}

json Container(const std::string& name, json requests) {
  return {{"name", name}, {"resources", {{"requests", std::move(requests)}}}};
}

json PodObj(const std::string& name, json containers, json init = json::array()) {
  json pod{{"metadata",
            {{"name", name},
             {"namespace", "ns"},
             {"uid", "uid-" + name},
             {"labels", {{"kai.scheduler/queue", "team-a"}}},
             {"annotations", {{"pod-group-name", "pg-" + name}}}}},
           {"spec", {{"schedulerName", "kai-scheduler"}, {"containers", std::move(containers)}}},
           {"status", {{"phase", "Pending"}}}};
  if (!init.empty()) pod["spec"]["initContainers"] = std::move(init);
  return pod;
}

json AccelPod(const std::string& name, int accels, const std::string& resource = kAccel) {
  return PodObj(name, json::array({Container("main", {{"cpu", "1"}, {resource, accels}})}));
}

json QueueObj(const std::string& name, const std::string& parent) {
  json q{{"metadata", {{"name", name}}},
         {"spec",
          {{"resources",
            {{"gpu", {{"quota", 0}, {"limit", -1}, {"overQuotaWeight", 1}}},
             {"cpu", {{"quota", 0}, {"limit", -1}, {"overQuotaWeight", 1}}},
             {"memory", {{"quota", 0}, {"limit", -1}, {"overQuotaWeight", 1}}}}}}}};
  if (!parent.empty()) q["spec"]["parentQueue"] = parent;
  return q;
}

json PodGroupObj(const std::string& name) {
  return json{{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "pg-" + name}}},
              {"spec", {{"queue", "team-a"}, {"minMember", 1}}}};
}

TEST(DraExtendedConvertTest, ExtendedResourceNamesAreCheckedAndBadOnesNamed) {
  EXPECT_TRUE(IsExtendedResourceName("example.com/accel"));
  EXPECT_TRUE(IsExtendedResourceName("nvidia.com/gpu"));
  for (const char* bad : {"accel", "kubernetes.io/accel", "foo.kubernetes.io/x", "requests.a/b",
                          "Example.com/accel", "example.com/", "example.com/-x", "/x"}) {
    EXPECT_FALSE(IsExtendedResourceName(bad)) << bad;
  }
  auto c = ConvertDeviceClass(DeviceClassObj("accel", kAccel));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c.value().extended_resource_name, kAccel);
  EXPECT_EQ(c.value().driver, kDriver);
  EXPECT_GT(c.value().creation_ms, 0);
  c = ConvertDeviceClass(DeviceClassObj("plain", ""));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c.value().extended_resource_name, "");

  json bad = DeviceClassObj("accel", "");
  bad["spec"]["extendedResourceName"] = 7;
  c = ConvertDeviceClass(bad);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("spec.extendedResourceName"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("must be a string"), std::string::npos) << c.error();
  for (const char* name :
       {"accel", "kubernetes.io/accel", "deviceclass.resource.kubernetes.io/x"}) {
    c = ConvertDeviceClass(DeviceClassObj("accel", name));
    ASSERT_FALSE(c.ok()) << name;
    EXPECT_NE(c.error().find("spec.extendedResourceName: must be a valid extended resource name"),
              std::string::npos)
        << c.error();
  }
}

TEST(DraExtendedConvertTest, PodRequestsBecomeTheSpecialClaimsRequestsAndMappings) {
  // Containers in order: init "setup" (plain, 1 accel), sidecar "proxy" (restartPolicy Always,
  // 1 accel), init "warm" (plain, 3 accels), app "a" (2 accels and the implicit name of class
  // "other"), app "b" (nothing).
  json setup = Container("setup", {{kAccel, "1"}});
  json proxy = Container("proxy", {{kAccel, "1"}, {"cpu", "100m"}});
  proxy["restartPolicy"] = "Always";
  json warm = Container("warm", {{kAccel, "3"}});
  json a = Container("a", {{"cpu", "1"},
                           {kAccel, "2"},
                           {"deviceclass.resource.kubernetes.io/other", "1"},
                           {"memory", "1Gi"}});
  json pod = PodObj("p", json::array({a, Container("b", {{"cpu", "1"}})}),
                    json::array({setup, proxy, warm}));
  auto rec = ConvertPod(pod);
  ASSERT_TRUE(rec.ok()) << rec.error();
  const auto& reqs = rec.value().extended_requests.items();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(reqs[0], (ContainerExtendedRequest{0, "setup", true, kAccel, 1, 0}));
  EXPECT_EQ(reqs[1], (ContainerExtendedRequest{1, "proxy", false, kAccel, 1, 1}));  // after cpu
  EXPECT_EQ(reqs[2], (ContainerExtendedRequest{2, "warm", true, kAccel, 3, 0}));
  // "a": cpu, deviceclass.resource.kubernetes.io/other, example.com/accel, memory.
  EXPECT_EQ(reqs[3], (ContainerExtendedRequest{3, "a", false,
                                               "deviceclass.resource.kubernetes.io/other", 1, 1}));
  EXPECT_EQ(reqs[4], (ContainerExtendedRequest{3, "a", false, kAccel, 2, 2}));

  const std::map<std::string, std::string, std::less<>> class_of{
      {kAccel, "accel"}, {"deviceclass.resource.kubernetes.io/other", "other"}};
  const auto plan = DraExtendedResources(reqs, class_of);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].resource, "deviceclass.resource.kubernetes.io/other");
  EXPECT_EQ(plan[0].device_class, "other");
  EXPECT_EQ(plan[0].requests, (std::vector<ExtendedDeviceRequest>{{"container-3-request-1", 1}}));
  const DraExtendedResource& accel = plan[1];
  EXPECT_EQ(accel.device_class, "accel");
  // "setup" reuses the devices of the sidecar and of "a" (3 >= 1); "warm" (index 2) can reuse
  // only "a"'s 2 and asks for 1 more. The largest init request is the only one kept.
  EXPECT_EQ(accel.requests, (std::vector<ExtendedDeviceRequest>{{"container-2-request-0", 1},
                                                                {"container-1-request-1", 1},
                                                                {"container-3-request-2", 2}}));
  EXPECT_EQ(accel.Devices(), 4);
  EXPECT_EQ(accel.mappings,
            (std::vector<ExtendedResourceMapping>{{"proxy", "container-1-request-1"},
                                                  {"a", "container-3-request-2"},
                                                  {"setup", "container-1-request-1"},
                                                  {"warm", "container-3-request-2"},
                                                  {"warm", "container-2-request-0"}}));
  // Resources no class backs are not DRA's.
  EXPECT_TRUE(DraExtendedResources(reqs, {}).empty());

  // A malformed quantity is named; a placed pod keeps no requests (its claim exists).
  json broken = AccelPod("q", 1);
  broken["spec"]["containers"][0]["resources"]["requests"][kAccel] = "lots";
  auto bad = ConvertPod(broken);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("spec.containers[0].resources.requests.example.com/accel"),
            std::string::npos)
      << bad.error();
  json placed = AccelPod("r", 1);
  placed["spec"]["nodeName"] = "n1";
  auto r = ConvertPod(placed);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r.value().extended_requests.empty());
}

TEST(DraExtendedConvertTest, BindRequestExtendedAllocation) {
  json br{{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
          {"spec",
           {{"podName", "p"},
            {"selectedNode", "n1"},
            {"extendedResourceClaimAllocation",
             {{"allocation",
               {{"devices",
                 {{"results", json::array({{{"request", "container-0-request-1"},
                                            {"driver", kDriver},
                                            {"pool", "n1"},
                                            {"device", "accel-0"}}})}}}}}}}}}};
  auto r = ConvertBindRequest(br);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().extended_allocation,
            (std::vector<DeviceResult>{{"container-0-request-1", kDriver, "n1", "accel-0"}}));
  br["spec"]["extendedResourceClaimAllocation"]["allocation"]["devices"]["results"][0].erase(
      "pool");
  r = ConvertBindRequest(br);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("spec.extendedResourceClaimAllocation.allocation.devices.results[0]"
                           ".pool"),
            std::string::npos)
      << r.error();
}

// A cache with nodes "dra" (2 accelerators in a ResourceSlice, none in its allocatable) and
// "plain" (no accelerators at all), queues root <- team-a.
class DraExtendedCacheTest : public ::testing::Test {
 protected:
  DraExtendedCacheTest() : cache_("kai-scheduler") {
    cache_.Replace(Kind::kNode, {NodeObj("dra"), NodeObj("plain")});
    cache_.Replace(Kind::kQueue, {QueueObj("root", ""), QueueObj("team-a", "root")});
    for (Kind k : {Kind::kPod, Kind::kPodGroup, Kind::kBindRequest, Kind::kPriorityClass,
                   Kind::kTopology, Kind::kNodeResourceTopology, Kind::kResourceClaim}) {
      cache_.Replace(k, {});
    }
    cache_.Replace(Kind::kDeviceClass, {DeviceClassObj("accel", kAccel)});
    cache_.Replace(Kind::kResourceSlice, {SliceObj("dra", 2)});
    auto created =
        Scheduler::Create(SchedulerConfig::Default(), BuiltinPlugins(), BuiltinActions());
    EXPECT_TRUE(created.ok()) << created.error();
    scheduler_ = std::move(created).value();
  }
  void AddPods(const std::vector<json>& pods) {
    for (const json& p : pods) {
      cache_.Apply(Kind::kPod, EventType::kAdded, p);
      cache_.Apply(Kind::kPodGroup, EventType::kAdded,
                   PodGroupObj("pg-" + p["metadata"]["name"].get<std::string>()));
    }
  }
  WatchCache cache_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(DraExtendedCacheTest, ClassesResolveExplicitAndImplicitNamesNewestFirst) {
  // A newer class claiming the same name wins it; the older keeps its implicit name.
  cache_.Replace(Kind::kDeviceClass, {DeviceClassObj("accel", kAccel),
                                      DeviceClassObj("accel-v2", kAccel, "2026-02-01T00:00:00Z")});
  AddPods({AccelPod("explicit", 1),
           AccelPod("implicit", 1, "deviceclass.resource.kubernetes.io/accel"),
           AccelPod("unbacked", 1, "example.com/other")});
  Snapshot snap = cache_.Take();
  const Cluster& cl = *snap.cluster;
  EXPECT_TRUE(snap.errors.empty());
  const Pod& ex = cl.pods[cl.FindPod("explicit")];
  ASSERT_EQ(ex.dra_extended.size(), 1u);
  EXPECT_EQ(ex.dra_extended[0].device_class, "accel-v2");
  EXPECT_EQ(ex.dra_extended[0].requests,
            (std::vector<ExtendedDeviceRequest>{{"container-0-request-1", 1}}));
  const Pod& im = cl.pods[cl.FindPod("implicit")];
  ASSERT_EQ(im.dra_extended.size(), 1u);
  EXPECT_EQ(im.dra_extended[0].device_class, "accel");
  EXPECT_TRUE(cl.pods[cl.FindPod("unbacked")].dra_extended.empty());
  EXPECT_TRUE(cl.nodes[cl.FindNode("dra")].extended_resources.empty());
  cache_.Apply(Kind::kNode, EventType::kAdded, NodeObj("plugin", 1));
  snap = cache_.Take();
  EXPECT_EQ(snap.cluster->nodes[snap.cluster->FindNode("plugin")].extended_resources,
            (std::vector<std::string>{kAccel}));

  // A class with a bad field is left out (reported), and the rest goes on.
  json bad = DeviceClassObj("broken", "no-domain");
  cache_.Apply(Kind::kDeviceClass, EventType::kAdded, bad);
  snap = cache_.Take();
  ASSERT_EQ(snap.errors.size(), 1u);
  EXPECT_NE(snap.errors[0].ToString().find("DeviceClass broken: spec.extendedResourceName"),
            std::string::npos)
      << snap.errors[0].ToString();
  EXPECT_EQ(snap.cluster->device_classes.size(), 2u);
}

TEST_F(DraExtendedCacheTest, PodsGetDevicesFromSlicesAndTheBindRequestCarriesThem) {
  // "big" wants 2 accelerators: the DRA node has 2. "three" wants 3: nowhere.
  AddPods({AccelPod("big", 2), AccelPod("three", 3)});
  Snapshot snap = cache_.Take();
  const Cluster& cl = *snap.cluster;
  auto ssn = scheduler_->OpenSession(cl, 0);
  scheduler_->RunActions(*ssn);
  ASSERT_EQ(ssn->binds().size(), 1u);
  const BindDecision& bind = ssn->binds()[0];
  EXPECT_EQ(cl.pods[bind.pod].name, "big");
  EXPECT_EQ(cl.nodes[bind.node].name, "dra");
  const json br = live::MakeBindRequest(*ssn, bind, 3);
  const json expected = {
      {"allocation",
       {{"devices",
         {{"results", json::array({{{"request", "container-0-request-1"},
                                    {"driver", kDriver},
                                    {"pool", "dra"},
                                    {"device", "accel-0"}},
                                   {{"request", "container-0-request-1"},
                                    {"driver", kDriver},
                                    {"pool", "dra"},
                                    {"device", "accel-1"}}})}}},
        {"nodeSelector",
         {{"nodeSelectorTerms",
           json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                       {"operator", "In"},
                                                       {"values", {"dra"}}}})}}})}}}}},
      {"deviceRequests",
       json::array(
           {{{"name", "container-0-request-1"},
             {"exactly",
              {{"deviceClassName", "accel"}, {"allocationMode", "ExactCount"}, {"count", 2}}}}})},
      {"containerMappings", json::array({{{"containerName", "main"},
                                          {"resourceName", kAccel},
                                          {"requestName", "container-0-request-1"}}})}};
  EXPECT_EQ(br["spec"]["extendedResourceClaimAllocation"], expected);
  EXPECT_FALSE(br["spec"].contains("resourceClaimAllocations"));
  // KAI's fit error for the pod that fits nowhere names the nodes DRA could not serve.
  const std::string errors =
      RenderJobFitErrors(ssn->job_state(cl.pods[cl.FindPod("three")].job).fit_errors);
  EXPECT_NE(errors.find("cannot allocate all DRA claims on node dra"), std::string::npos) << errors;
  EXPECT_NE(errors.find("cannot allocate all DRA claims on node plain"), std::string::npos)
      << errors;

  // While big's BindRequest is in force its devices stay taken: a 1-accelerator pod finds none
  // free; on a node whose device plugin has the resource it goes without a special claim.
  json br_obj = br;
  br_obj["metadata"]["resourceVersion"] = "1";
  cache_.Apply(Kind::kBindRequest, EventType::kAdded, br_obj);
  AddPods({AccelPod("one", 1)});
  cache_.Apply(Kind::kPod, EventType::kDeleted, AccelPod("three", 3));
  snap = cache_.Take();
  {
    const Cluster& next = *snap.cluster;
    EXPECT_EQ(next.pods[next.FindPod("big")].status, PodStatus::kBinding);
    auto ssn2 = scheduler_->OpenSession(next, 1);
    scheduler_->RunActions(*ssn2);
    EXPECT_TRUE(ssn2->binds().empty());
  }
  cache_.Apply(Kind::kNode, EventType::kAdded, NodeObj("plugin", 1));
  snap = cache_.Take();
  const Cluster& next = *snap.cluster;
  auto ssn3 = scheduler_->OpenSession(next, 2);
  scheduler_->RunActions(*ssn3);
  ASSERT_EQ(ssn3->binds().size(), 1u);
  EXPECT_EQ(next.pods[ssn3->binds()[0].pod].name, "one");
  EXPECT_EQ(next.nodes[ssn3->binds()[0].node].name, "plugin");
  const json br3 = live::MakeBindRequest(*ssn3, ssn3->binds()[0], 3);
  EXPECT_FALSE(br3["spec"].contains("extendedResourceClaimAllocation"));
}

TEST_F(DraExtendedCacheTest, ABoundPodsRequestHoldsTheDevicesUntilTheBinderGivesUp) {
  AddPods({AccelPod("big", 2)});
  Snapshot snap = cache_.Take();
  auto ssn = scheduler_->OpenSession(*snap.cluster, 0);
  scheduler_->RunActions(*ssn);
  ASSERT_EQ(ssn->binds().size(), 1u);
  json br = live::MakeBindRequest(*ssn, ssn->binds()[0], 3);
  br["metadata"]["resourceVersion"] = "1";
  br["status"] = {{"phase", "Succeeded"}};
  cache_.Apply(Kind::kBindRequest, EventType::kAdded, br);
  // The pod is bound, but the cache has not seen the claim the binder made yet (another watch).
  json bound = AccelPod("big", 2);
  bound["spec"]["nodeName"] = "dra";
  cache_.Apply(Kind::kPod, EventType::kModified, bound);
  AddPods({AccelPod("one", 1)});
  snap = cache_.Take();
  EXPECT_EQ(snap.cluster->pods[snap.cluster->FindPod("big")].status, PodStatus::kBound);
  auto ssn2 = scheduler_->OpenSession(*snap.cluster, 1);
  scheduler_->RunActions(*ssn2);
  EXPECT_TRUE(ssn2->binds().empty());
  // A request the binder gave up on (it deleted its claim) holds nothing.
  br["status"] = {{"phase", "Failed"}, {"failedAttempts", 4}};
  br["metadata"]["resourceVersion"] = "2";
  cache_.Apply(Kind::kBindRequest, EventType::kModified, br);
  snap = cache_.Take();
  auto ssn3 = scheduler_->OpenSession(*snap.cluster, 2);
  scheduler_->RunActions(*ssn3);
  ASSERT_EQ(ssn3->binds().size(), 1u);
  EXPECT_EQ(snap.cluster->pods[ssn3->binds()[0].pod].name, "one");
}

TEST_F(DraExtendedCacheTest, DeviceTakenBackWhenThePodIsRemovedFromTheNode) {
  AddPods({AccelPod("a", 1)});
  Snapshot snap = cache_.Take();
  const Cluster& cl = *snap.cluster;
  auto ssn = scheduler_->OpenSession(cl, 0);
  const PodId a = cl.FindPod("a");
  const NodeId dra = cl.FindNode("dra");
  ssn->dra().Reserve(a, cl.pods[a], dra);
  ASSERT_NE(ssn->dra().extended(a), nullptr);
  EXPECT_EQ(ssn->dra().extended(a)->devices, (std::vector<DeviceRef>{{0, 0}}));
  EXPECT_EQ(ssn->dra().extended(a)->requests, (std::vector<std::string>{"container-0-request-1"}));
  ssn->dra().Unreserve(a, cl.pods[a]);
  EXPECT_EQ(ssn->dra().extended(a), nullptr);
  // Where no device is free, none is taken (the predicate keeps the pod off such a node).
  EXPECT_FALSE(ssn->dra().Fits(cl.pods[a], cl.FindNode("plain")));
  ssn->dra().Reserve(a, cl.pods[a], cl.FindNode("plain"));
  EXPECT_EQ(ssn->dra().extended(a), nullptr);
}

}  // namespace
}  // namespace extended_claims_test
}  // namespace gantry::cache
