// DRA objects in the live model: converters for DeviceClass, ResourceSlice, ResourceClaim and a
// pod's claims, the watch cache filling Cluster's DRA fields (and a cluster without the API),
// and the BindRequest the scheduler writes for a pod with a claim.
#include <gtest/gtest.h>

#include "actions/builtin.h"
#include "cache/convert.h"
#include "cache/watch_cache.h"
#include "framework/session.h"
#include "live/decisions.h"
#include "plugins/builtin.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"

namespace gantry::cache {
namespace {

using kube::EventType;
using nlohmann::json;

json DeviceClassObj(const std::string& name, const std::string& driver) {
  json c{{"metadata", {{"name", name}}}, {"spec", json::object()}};
  if (!driver.empty()) {
    c["spec"]["selectors"] =
        json::array({{{"cel", {{"expression", "device.driver == \"" + driver + "\""}}}}});
  }
  return c;
}

json SliceObj(const std::string& name, const std::string& node, const std::string& driver,
              int devices) {
  json s{{"metadata", {{"name", name}}},
         {"spec",
          {{"driver", driver},
           {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
           {"nodeName", node},
           {"devices", json::array()}}}};
  for (int i = 0; i < devices; ++i) {
    s["spec"]["devices"].push_back({{"name", "gpu-" + std::to_string(i)}});
  }
  return s;
}

json ClaimObj(const std::string& ns, const std::string& name, const std::string& cls, int count) {
  return json{{"metadata",
               {{"name", name},
                {"namespace", ns},
                {"uid", "uid-" + name},
                {"labels", {{"kai.scheduler/queue", "team-a"}}}}},
              {"spec",
               {{"devices",
                 {{"requests", json::array({{{"name", "gpus"},
                                             {"exactly",
                                              {{"deviceClassName", cls},
                                               {"allocationMode", "ExactCount"},
                                               {"count", count}}}}})}}}}}};
}

// A claim allocation of one device: {"devices": {"results": [...]}}.
json OneDeviceAllocation(const std::string& driver, const std::string& pool,
                         const std::string& device) {
  return json{
      {"devices",
       {{"results",
         json::array(
             {{{"request", "gpus"}, {"driver", driver}, {"pool", pool}, {"device", device}}})}}}};
}

json NodeObj(const std::string& name) {
  return json{{"metadata", {{"name", name}}},
              {"status", {{"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}}}}}};
}

json PodObj(const std::string& ns, const std::string& name, const std::string& claim) {
  json pod{{"metadata",
            {{"name", name},
             {"namespace", ns},
             {"uid", "uid-" + name},
             {"labels", {{"kai.scheduler/queue", "team-a"}}},
             {"annotations", {{"pod-group-name", "pg-" + name}}}}},
           {"spec",
            {{"schedulerName", "kai-scheduler"},
             {"containers",
              json::array({{{"name", "main"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}},
           {"status", {{"phase", "Pending"}}}};
  if (!claim.empty()) {
    pod["spec"]["resourceClaims"] = json::array({{{"name", "gpu"}, {"resourceClaimName", claim}}});
  }
  return pod;
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

json PodGroupObj(const std::string& ns, const std::string& name) {
  return json{{"metadata", {{"name", name}, {"namespace", ns}, {"uid", "pg-" + name}}},
              {"spec", {{"queue", "team-a"}, {"minMember", 1}}}};
}

TEST(DraConvertTest, DeviceClassReadsTheDriverSelector) {
  auto c = ConvertDeviceClass(DeviceClassObj("gpu.example.com", "gpu.example.com"));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c.value().driver, "gpu.example.com");
  json other = DeviceClassObj("fast-gpu", "");
  other["spec"]["selectors"] =
      json::array({{{"cel", {{"expression", "device.attributes['x'].y == 3"}}}},
                   {{"cel", {{"expression", "device.driver=='gpu.example.com'"}}}}});
  c = ConvertDeviceClass(other);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c.value().driver, "gpu.example.com");
  c = ConvertDeviceClass(DeviceClassObj("plain", ""));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().driver, "");
}

TEST(DraConvertTest, SlicesNameTheirDevicesAndRefuseWhatTheModelCannotHold) {
  auto s = ConvertResourceSlice(SliceObj("n1-gpus", "n1", "gpu.example.com", 3));
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s.value().pool, "n1");
  EXPECT_EQ(s.value().node_name, "n1");
  EXPECT_EQ(s.value().devices, (std::vector<std::string>{"gpu-0", "gpu-1", "gpu-2"}));

  json sel = SliceObj("x", "n1", "d", 1);
  sel["spec"].erase("nodeName");
  sel["spec"]["nodeSelector"] = {{"nodeSelectorTerms", json::array()}};
  s = ConvertResourceSlice(sel);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("spec.nodeSelector"), std::string::npos) << s.error();

  json neither = SliceObj("x", "n1", "d", 1);
  neither["spec"].erase("nodeName");
  s = ConvertResourceSlice(neither);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("spec.nodeName"), std::string::npos) << s.error();

  json twice = SliceObj("x", "n1", "d", 2);
  twice["spec"]["devices"][1]["name"] = "gpu-0";
  s = ConvertResourceSlice(twice);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("spec.devices[1].name"), std::string::npos) << s.error();
}

TEST(DraConvertTest, ClaimsSumExactCountRequestsOfOneClassWithStatus) {
  json claim = ClaimObj("ns", "c", "gpu.example.com", 2);
  claim["spec"]["devices"]["requests"].push_back(
      {{"name", "more"}, {"exactly", {{"deviceClassName", "gpu.example.com"}}}});
  claim["status"] = {
      {"allocation", OneDeviceAllocation("gpu.example.com", "n1", "gpu-1")},
      {"reservedFor", json::array({{{"resource", "pods"}, {"name", "p"}, {"uid", "u"}}})}};
  auto c = ConvertResourceClaim(claim);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c.value().claim.device_class, "gpu.example.com");
  EXPECT_EQ(c.value().claim.count, 3);
  EXPECT_EQ(c.value().claim.device_requests, (std::vector<std::string>{"gpus", "gpus", "more"}));
  EXPECT_TRUE(c.value().allocated);
  ASSERT_EQ(c.value().results.size(), 1u);
  EXPECT_EQ(c.value().results[0].device, "gpu-1");
  ASSERT_EQ(c.value().reserved_for.size(), 1u);
  EXPECT_EQ(c.value().reserved_for[0].name, "p");

  json two = ClaimObj("ns", "c", "a", 1);
  two["spec"]["devices"]["requests"].push_back(
      {{"name", "b"}, {"exactly", {{"deviceClassName", "b"}}}});
  c = ConvertResourceClaim(two);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("spec.devices.requests[1].exactly.deviceClassName"), std::string::npos)
      << c.error();

  json all = ClaimObj("ns", "c", "a", 1);
  all["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All";
  c = ConvertResourceClaim(all);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("allocationMode"), std::string::npos) << c.error();

  json first = ClaimObj("ns", "c", "a", 1);
  first["spec"]["devices"]["requests"][0].erase("exactly");
  first["spec"]["devices"]["requests"][0]["firstAvailable"] = json::array();
  c = ConvertResourceClaim(first);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("spec.devices.requests[0].firstAvailable"), std::string::npos);

  json bad_result = ClaimObj("ns", "c", "a", 1);
  bad_result["status"]["allocation"]["devices"]["results"] =
      json::array({{{"request", "gpus"}, {"driver", "d"}, {"pool", "n1"}}});
  c = ConvertResourceClaim(bad_result);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("status.allocation.devices.results[0].device"), std::string::npos)
      << c.error();
}

TEST(DraConvertTest, PodClaimsByNameOrGeneratedFromTemplates) {
  json pod = PodObj("ns", "p", "c1");
  pod["spec"]["resourceClaims"].push_back({{"name", "tmpl"}, {"resourceClaimTemplateName", "t"}});
  auto rec = ConvertPod(pod);
  ASSERT_TRUE(rec.ok()) << rec.error();
  ASSERT_EQ(rec.value().claims.size(), 2u);
  EXPECT_EQ(rec.value().claims[0], (PodClaimRef{"gpu", "c1", false}));
  EXPECT_EQ(rec.value().claims[1], (PodClaimRef{"tmpl", "", true}));  // not generated yet
  pod["status"]["resourceClaimStatuses"] =
      json::array({{{"name", "tmpl"}, {"resourceClaimName", "p-tmpl-x7"}}});
  rec = ConvertPod(pod);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec.value().claims[1], (PodClaimRef{"tmpl", "p-tmpl-x7", true}));
  pod["spec"]["resourceClaims"].push_back({{"name", "neither"}});
  rec = ConvertPod(pod);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.error().find("spec.resourceClaims[2]"), std::string::npos) << rec.error();
}

TEST(GpuGroupConvertTest, BoundPodsCarryTheGroupsTheBinderLabelledThemWith) {
  json pod = PodObj("ns", "p", "");
  pod["metadata"]["labels"]["runai-gpu-group"] = "g1";
  auto rec = ConvertPod(pod);
  ASSERT_TRUE(rec.ok()) << rec.error();
  EXPECT_EQ(rec.value().pod.gpu_groups, (std::vector<std::string>{"g1"}));
  json multi = PodObj("ns", "m", "");
  multi["metadata"]["labels"]["runai-gpu-group/g9"] = "g9";
  multi["metadata"]["labels"]["runai-gpu-group/g2"] = "g2";
  rec = ConvertPod(multi);
  ASSERT_TRUE(rec.ok()) << rec.error();
  EXPECT_EQ(rec.value().pod.gpu_groups, (std::vector<std::string>{"g2", "g9"}));
  rec = ConvertPod(PodObj("ns", "none", ""));
  ASSERT_TRUE(rec.ok());
  EXPECT_TRUE(rec.value().pod.gpu_groups.empty());
  // A reservation pod's GPU belongs to the group's pods: not counted again.
  json reservation = PodObj("kai-resource-reservation", "gpu-reservation-n1-abcde", "");
  reservation["metadata"]["labels"] = {{"app", "kai-resource-reservation"},
                                       {"runai-gpu-group", "g1"}};
  reservation["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1";
  rec = ConvertPod(reservation);
  ASSERT_TRUE(rec.ok()) << rec.error();
  EXPECT_EQ(rec.value().pod.request.gpus, 0);
  EXPECT_EQ(rec.value().pod.gpu_kind, GpuRequestKind::kNoGpu);
}

TEST(DraConvertTest, BindRequestClaimAllocations) {
  json br{{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
          {"spec",
           {{"podName", "p"},
            {"selectedNode", "n1"},
            {"resourceClaimAllocations",
             json::array(
                 {{{"name", "gpu"}, {"allocation", OneDeviceAllocation("d", "n1", "gpu-0")}}})}}}};
  auto r = ConvertBindRequest(br);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r.value().claim_allocations.size(), 1u);
  EXPECT_EQ(r.value().claim_allocations[0].first, "gpu");
  EXPECT_EQ(r.value().claim_allocations[0].second,
            (std::vector<DeviceResult>{{"gpus", "d", "n1", "gpu-0"}}));
  br["spec"]["resourceClaimAllocations"][0].erase("name");
  r = ConvertBindRequest(br);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("spec.resourceClaimAllocations[0].name"), std::string::npos);
}

// A cache with one node, queues root <- team-a, every kind synced (no DRA objects).
class DraCacheTest : public ::testing::Test {
 protected:
  DraCacheTest() : cache_("kai-scheduler") {
    cache_.Replace(Kind::kNode, {NodeObj("n1"), NodeObj("n2")});
    cache_.Replace(Kind::kQueue, {QueueObj("root", ""), QueueObj("team-a", "root")});
    for (Kind k : {Kind::kPod, Kind::kPodGroup, Kind::kBindRequest, Kind::kPriorityClass,
                   Kind::kTopology, Kind::kNodeResourceTopology, Kind::kDeviceClass,
                   Kind::kResourceSlice, Kind::kResourceClaim}) {
      cache_.Replace(k, {});
    }
  }
  WatchCache cache_;
};

TEST_F(DraCacheTest, SlicesClaimsAndPodsFillTheModel) {
  cache_.Replace(Kind::kDeviceClass, {DeviceClassObj("gpu.example.com", "gpu.example.com")});
  cache_.Replace(Kind::kResourceSlice, {SliceObj("n1-gpus", "n1", "gpu.example.com", 2),
                                        SliceObj("gone-gpus", "gone", "gpu.example.com", 2)});
  json allocated = ClaimObj("ns", "held", "gpu.example.com", 1);
  allocated["status"] = {
      {"allocation", OneDeviceAllocation("gpu.example.com", "n1", "gpu-1")},
      {"reservedFor", json::array({{{"resource", "pods"}, {"name", "p1"}, {"uid", "uid-p1"}},
                                   {{"resource", "pods"}, {"name", "elsewhere"}, {"uid", "x"}}})}};
  cache_.Replace(Kind::kResourceClaim,
                 {ClaimObj("ns", "free", "gpu.example.com", 1), std::move(allocated)});
  json running = PodObj("ns", "p1", "held");
  running["spec"]["nodeName"] = "n1";
  running["status"]["phase"] = "Running";
  cache_.Replace(Kind::kPod, {running, PodObj("ns", "p2", "free"), PodObj("ns", "p3", "missing")});
  cache_.Replace(Kind::kPodGroup, {PodGroupObj("ns", "pg-p1"), PodGroupObj("ns", "pg-p2"),
                                   PodGroupObj("ns", "pg-p3")});
  Snapshot snap = cache_.Take();
  const Cluster& cl = *snap.cluster;
  EXPECT_TRUE(cl.dra_enabled);
  EXPECT_EQ(cl.device_classes, (std::vector<std::string>{"gpu.example.com"}));
  ASSERT_EQ(cl.resource_slices.size(), 1u);  // the slice of an unknown node is left out
  const ResourceSlice& s = cl.resource_slices[0];
  EXPECT_EQ(s.device_class, "gpu.example.com");
  EXPECT_EQ(s.device_count, 2);
  EXPECT_EQ(s.pool, "n1");
  const NodeId n1 = cl.FindNode("n1");
  EXPECT_EQ(s.node, n1);
  EXPECT_EQ(cl.nodes[n1].dra_gpus, 2);
  EXPECT_EQ(cl.nodes[n1].allocatable.gpus, 2);
  // Two claims plus a stand-in for the missing one.
  ASSERT_EQ(cl.resource_claims.size(), 3u);
  const PodId p1 = cl.FindPod("p1");
  const PodId p2 = cl.FindPod("p2");
  const PodId p3 = cl.FindPod("p3");
  ASSERT_NE(p1, kNone);
  ASSERT_EQ(cl.pods[p1].claims.size(), 1u);
  const ResourceClaim& held = cl.resource_claims[cl.pods[p1].claims[0]];
  EXPECT_EQ(held.name, "held");
  EXPECT_TRUE(held.allocated);
  EXPECT_EQ(held.allocation, (std::vector<DeviceRef>{{0, 1}}));
  EXPECT_EQ(held.reserved, (std::vector<int32_t>{p1}));
  EXPECT_EQ(held.other_consumers, 1);
  EXPECT_EQ(cl.pods[p1].claim_names, (std::vector<std::string>{"gpu"}));
  EXPECT_EQ(cl.pods[p1].dra_gpus, 1);
  const ResourceClaim& free = cl.resource_claims[cl.pods[p2].claims[0]];
  EXPECT_EQ(free.name, "free");
  EXPECT_FALSE(free.allocated);
  ASSERT_EQ(cl.pods[p3].claims.size(), 1u);
  ASSERT_EQ(snap.errors.size(), 1u);
  EXPECT_EQ(snap.errors[0].ToString(),
            "Pod ns/p3: spec.resourceClaims[0]: resource claim \"missing\" not found");

  // One cycle: p2 gets the free device (gpu-0; gpu-1 is held); p3 cannot be placed.
  auto created = Scheduler::Create(SchedulerConfig::Default(), BuiltinPlugins(), BuiltinActions());
  ASSERT_TRUE(created.ok()) << created.error();
  Scheduler& scheduler = *created.value();
  auto ssn = scheduler.OpenSession(*snap.cluster, 0);
  scheduler.RunActions(*ssn);
  std::vector<PodId> bound;
  for (const auto& b : ssn->binds()) bound.push_back(b.pod);
  ASSERT_EQ(bound, (std::vector<PodId>{p2}));
  json br = live::MakeBindRequest(*ssn, ssn->binds()[0], 3);
  EXPECT_EQ(br["spec"]["selectedNode"], "n1");
  ASSERT_EQ(br["spec"]["resourceClaimAllocations"].size(), 1u);
  const json& a = br["spec"]["resourceClaimAllocations"][0];
  EXPECT_EQ(a["name"], "gpu");
  EXPECT_EQ(a["allocation"]["devices"]["results"], json::array({{{"request", "gpus"},
                                                                 {"driver", "gpu.example.com"},
                                                                 {"pool", "n1"},
                                                                 {"device", "gpu-0"}}}));
  EXPECT_EQ(a["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"],
            json::array({"n1"}));

  // While that BindRequest is in force, the device it names is held: a pod wanting another
  // claim on the same class finds no free device.
  json br_obj = br;
  br_obj["metadata"]["resourceVersion"] = "1";
  cache_.Apply(Kind::kBindRequest, EventType::kAdded, br_obj);
  cache_.Apply(Kind::kResourceClaim, EventType::kAdded,
               ClaimObj("ns", "third", "gpu.example.com", 1));
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "p4", "third"));
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "pg-p4"));
  snap = cache_.Take();
  const Cluster& next = *snap.cluster;
  const PodId q2 = next.FindPod("p2");
  EXPECT_EQ(next.pods[q2].status, PodStatus::kBinding);
  const ResourceClaim& now_free = next.resource_claims[next.pods[q2].claims[0]];
  EXPECT_TRUE(now_free.allocated);
  EXPECT_EQ(now_free.allocation, (std::vector<DeviceRef>{{0, 0}}));
  auto ssn2 = scheduler.OpenSession(*snap.cluster, 1);
  scheduler.RunActions(*ssn2);
  for (const auto& b : ssn2->binds()) EXPECT_NE(next.pods[b.pod].name, "p4");
}

TEST(DraCacheSyncTest, AClusterWithoutTheDraApiHasItOff) {
  WatchCache cache("kai-scheduler");
  for (int k = 0; k < kNumKinds; ++k) {
    const Kind kind = static_cast<Kind>(k);
    if (kind == Kind::kDeviceClass || kind == Kind::kResourceSlice ||
        kind == Kind::kResourceClaim) {
      continue;
    }
    cache.Replace(kind, {});
  }
  EXPECT_FALSE(cache.synced());
  const kube::ApiError not_found{404, "NotFound", "not served"};
  for (Kind kind : {Kind::kDeviceClass, Kind::kResourceSlice, Kind::kResourceClaim}) {
    cache.handler(kind).OnError(not_found, std::chrono::seconds(1));
  }
  EXPECT_TRUE(cache.synced());
  EXPECT_FALSE(cache.Take().cluster->dra_enabled);
  // Served later: listed, and on again.
  for (Kind kind : {Kind::kDeviceClass, Kind::kResourceSlice, Kind::kResourceClaim}) {
    cache.handler(kind).OnSync({}, "5");
  }
  EXPECT_TRUE(cache.Take().cluster->dra_enabled);
}

}  // namespace
}  // namespace gantry::cache
