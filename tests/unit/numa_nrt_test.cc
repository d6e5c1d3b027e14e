// Live mode's side of NUMA-aware placement: NodeResourceTopology objects
// (topology.node.k8s.io/v1alpha2) and the observed-placement pod annotation read into the model,
// bad fields named; the watch cache giving nodes their layout; a cycle that uses it.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cache/convert.h"
#include "cache/watch_cache.h"
#include "framework/session.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"

namespace gantry::cache {
namespace {

using nlohmann::json;

json Resource(const std::string& name, const std::string& allocatable,
              const std::string& available) {
  return json{{"name", name},
              {"capacity", allocatable},
              {"allocatable", allocatable},
              {"available", available}};
}

json Zone(const std::string& name, json resources, const std::string& type = "Node") {
  return json{{"name", name}, {"type", type}, {"resources", std::move(resources)}};
}

json Nrt(const std::string& node, json zones, const std::string& policy = "single-numa-node",
         const std::string& scope = "") {
  json attributes = json::array();
  if (!policy.empty()) attributes.push_back({{"name", "topologyManagerPolicy"}, {"value", policy}});
  if (!scope.empty()) attributes.push_back({{"name", "topologyManagerScope"}, {"value", scope}});
  return json{{"apiVersion", "topology.node.k8s.io/v1alpha2"},
              {"kind", "NodeResourceTopology"},
              {"metadata", {{"name", node}}},
              {"topologyPolicies", json::array()},
              {"attributes", attributes},
              {"zones", std::move(zones)}};
}

// Two NUMA zones of `cpus` CPUs each (all available) and 64Gi of memory.
json TwoZoneNrt(const std::string& node, int cpus, const std::string& policy = "single-numa-node") {
  json zones = json::array();
  for (int z = 0; z < 2; ++z) {
    zones.push_back(Zone("node-" + std::to_string(z),
                         json::array({Resource("cpu", std::to_string(cpus), std::to_string(cpus)),
                                      Resource("memory", "64Gi", "64Gi")})));
  }
  return Nrt(node, zones, policy);
}

NodeTopologyRecord Convert(const json& nrt) {
  auto r = ConvertNodeResourceTopology(nrt);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? std::move(r).value() : NodeTopologyRecord{};
}

std::string ConvertError(const json& nrt) {
  auto r = ConvertNodeResourceTopology(nrt);
  return r.ok() ? std::string("(converted)") : r.error();
}

TEST(NodeResourceTopologyTest, ReadsNumaZonesPolicyScopeAndAmounts) {
  json zones = json::array(
      {Zone("node-1", json::array({Resource("cpu", "16", "12"), Resource("memory", "64Gi", "60Gi"),
                                   Resource("nvidia.com/gpu", "4", "2")})),
       Zone("socket-0", json::array({Resource("cpu", "32", "32")}), "Socket"),
       Zone("node-0", json::array({Resource("cpu", "15500m", "250m")}))});
  const NodeTopologyRecord r = Convert(Nrt("worker-1", zones, "restricted", "pod"));
  EXPECT_EQ(r.node_name, "worker-1");
  ASSERT_TRUE(r.numa.has_value());
  const NumaTopology& t = *r.numa;
  EXPECT_EQ(t.policy, NumaPolicy::kRestricted);
  EXPECT_EQ(t.scope, NumaScope::kPod);
  // Only NUMA-node zones, in NUMA-node order (not the order listed).
  ASSERT_EQ(t.zones.size(), 2u);
  EXPECT_EQ(t.zones[0].id, "node-0");
  EXPECT_EQ(t.zones[1].id, "node-1");
  // cpu in millicores, the rest in base units.
  EXPECT_EQ(t.zones[0].allocatable, (ResourceAmounts{{"cpu", 15500}}));
  EXPECT_EQ(t.zones[0].available, (ResourceAmounts{{"cpu", 250}}));
  EXPECT_EQ(t.zones[1].allocatable,
            (ResourceAmounts{{"cpu", 16000}, {"memory", 64.0 * (1 << 30)}, {"nvidia.com/gpu", 4}}));
  EXPECT_EQ(t.zones[1].available,
            (ResourceAmounts{{"cpu", 12000}, {"memory", 60.0 * (1 << 30)}, {"nvidia.com/gpu", 2}}));
  EXPECT_TRUE(t.IsAware("nvidia.com/gpu"));
  EXPECT_FALSE(t.IsAware("hugepages-1Gi"));
}

TEST(NodeResourceTopologyTest, ZonesAreOrderedByTheirNumberThenName) {
  json zones = json::array();
  for (const char* name : {"zone-b", "node-10", "zone-a", "node-2"}) {
    zones.push_back(Zone(name, json::array({Resource("cpu", "1", "1")})));
  }
  const NodeTopologyRecord r = Convert(Nrt("n", zones));
  ASSERT_TRUE(r.numa.has_value());
  std::vector<std::string> ids;
  for (const NumaZone& z : r.numa->zones) ids.push_back(z.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"node-2", "node-10", "zone-a", "zone-b"}));
}

TEST(NodeResourceTopologyTest, PolicyFromAttributesElseFromTheDeprecatedField) {
  json nrt = TwoZoneNrt("n", 4, "");
  // Neither: none, container scope (the kubelet's defaults).
  NodeTopologyRecord r = Convert(nrt);
  ASSERT_TRUE(r.numa.has_value());
  EXPECT_EQ(r.numa->policy, NumaPolicy::kNone);
  EXPECT_EQ(r.numa->scope, NumaScope::kContainer);
  // The deprecated combined value names both.
  nrt["topologyPolicies"] = json::array({"SingleNUMANodePodLevel"});
  r = Convert(nrt);
  EXPECT_EQ(r.numa->policy, NumaPolicy::kSingleNumaNode);
  EXPECT_EQ(r.numa->scope, NumaScope::kPod);
  nrt["topologyPolicies"] = json::array({"BestEffort"});
  r = Convert(nrt);
  EXPECT_EQ(r.numa->policy, NumaPolicy::kBestEffort);
  EXPECT_EQ(r.numa->scope, NumaScope::kContainer);
  // The attribute wins over it; the scope attribute alone defaults to container.
  nrt["attributes"] = json::array({{{"name", "topologyManagerPolicy"}, {"value", "restricted"}}});
  r = Convert(nrt);
  EXPECT_EQ(r.numa->policy, NumaPolicy::kRestricted);
  EXPECT_EQ(r.numa->scope, NumaScope::kContainer);
}

TEST(NodeResourceTopologyTest, NoNumaNodeZoneMeansNoLayout) {
  const NodeTopologyRecord r = Convert(Nrt(
      "n", json::array({Zone("socket-0", json::array({Resource("cpu", "8", "8")}), "Socket")})));
  EXPECT_EQ(r.node_name, "n");
  EXPECT_FALSE(r.numa.has_value());
}

TEST(NodeResourceTopologyTest, BadFieldsAreNamed) {
  struct Case {
    const char* what;
    void (*mutate)(json&);
    const char* error;
  };
  const Case cases[] = {
      {"no name", [](json& o) { o["metadata"].erase("name"); }, "metadata.name: missing"},
      {"zones not a list", [](json& o) { o["zones"] = "node-0"; }, "zones: must be a list"},
      {"zone without type", [](json& o) { o["zones"][1].erase("type"); }, "zones[1].type: missing"},
      {"zone without name", [](json& o) { o["zones"][0]["name"] = ""; },
       "zones[0].name: must not be empty"},
      {"zone twice", [](json& o) { o["zones"][1]["name"] = "node-0"; },
       "zones[1].name: zone \"node-0\" is listed twice"},
      {"resource without name", [](json& o) { o["zones"][0]["resources"][1].erase("name"); },
       "zones[0].resources[1].name: missing"},
      {"resource twice", [](json& o) { o["zones"][1]["resources"][1]["name"] = "cpu"; },
       "zones[1].resources[1].name: resource \"cpu\" is listed twice in zone \"node-1\""},
      {"malformed amount", [](json& o) { o["zones"][0]["resources"][0]["available"] = "lots"; },
       "zones[0].resources[0].available: malformed quantity"},
      {"negative amount", [](json& o) { o["zones"][1]["resources"][1]["allocatable"] = "-1Gi"; },
       "zones[1].resources[1].allocatable: must not be negative"},
      {"missing amount", [](json& o) { o["zones"][0]["resources"][0].erase("allocatable"); },
       "zones[0].resources[0].allocatable: missing"},
      {"unknown policy", [](json& o) { o["attributes"][0]["value"] = "single-numa"; },
       "attributes[0].value: must be none, best-effort, restricted or single-numa-node (got "
       "\"single-numa\")"},
      {"unknown scope",
       [](json& o) {
         o["attributes"].push_back({{"name", "topologyManagerScope"}, {"value", "socket"}});
       },
       "attributes[1].value: must be container or pod (got \"socket\")"},
      {"unknown deprecated policy",
       [](json& o) {
         o["attributes"] = json::array();
         o["topologyPolicies"] = json::array({"Strict"});
       },
       "topologyPolicies[0]: must be one of SingleNUMANodePodLevel,"},
  };
  for (const Case& c : cases) {
    json nrt = TwoZoneNrt("n", 4);
    c.mutate(nrt);
    const std::string error = ConvertError(nrt);
    EXPECT_NE(error.find(c.error), std::string::npos)
        << c.what << ": got \"" << error << "\", want it to contain \"" << c.error << "\"";
  }
}

TEST(NumaPlacementAnnotationTest, ReadsZonesAndAmounts) {
  auto r = ConvertNumaPlacement(
      R"([{"zone":"node-0","amount":{"cpu":"2","memory":"1Gi"}},{"zone":"node-1","amount":{"cpu":"500m"}}])",
      "a");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r.value().size(), 2u);
  EXPECT_EQ(r.value()[0].zone, "node-0");
  EXPECT_EQ(r.value()[0].amount, (ResourceAmounts{{"cpu", 2000}, {"memory", 1 << 30}}));
  EXPECT_EQ(r.value()[1].zone, "node-1");
  EXPECT_EQ(r.value()[1].amount, (ResourceAmounts{{"cpu", 500}}));
}

TEST(NumaPlacementAnnotationTest, BadValuesAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"zone-0", "a: must be a JSON list of {zone, amount} (not JSON)"},
      {R"({"zone":"node-0"})", "a: must be a JSON list of {zone, amount}"},
      {R"([{"amount":{"cpu":"1"}}])", "a[0].zone: missing"},
      {R"([{"zone":"node-0"},{"zone":"node-0"}])", "a[1].zone: zone \"node-0\" is listed twice"},
      {R"([{"zone":"node-0","amount":{"cpu":"x"}}])", "a[0].amount.cpu: malformed quantity"},
      {R"([{"zone":"node-0","amount":["cpu"]}])", "a[0].amount: must be a map"},
  };
  for (const auto& [value, error] : cases) {
    auto r = ConvertNumaPlacement(value, "a");
    ASSERT_FALSE(r.ok()) << value;
    EXPECT_NE(r.error().find(error), std::string::npos) << value << ": " << r.error();
  }
}

json PodWith(const std::string& qos, const std::string& placement = "") {
  json pod{{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u"}}},
           {"spec",
            {{"schedulerName", "kai-scheduler"},
             {"containers", json::array({{{"name", "c"},
                                          {"resources",
                                           {{"requests", {{"cpu", "4"}, {"memory", "1Gi"}}},
                                            {"limits", {{"cpu", "4"}, {"memory", "1Gi"}}}}}}})}}},
           {"status", {{"phase", "Pending"}, {"qosClass", qos}}}};
  if (!placement.empty()) {
    pod["metadata"]["annotations"][kNumaPlacementObservedAnnotation] = placement;
  }
  return pod;
}

TEST(NumaPodTest, QosClassAndObservedPlacementAreRead) {
  auto guaranteed =
      ConvertPod(PodWith("Guaranteed", R"([{"zone":"node-1","amount":{"cpu":"4"}}])"));
  ASSERT_TRUE(guaranteed.ok()) << guaranteed.error();
  EXPECT_TRUE(guaranteed.value().qos_guaranteed);
  ASSERT_EQ(guaranteed.value().pod.numa_observed.size(), 1u);
  EXPECT_EQ(guaranteed.value().pod.numa_observed[0].zone, "node-1");
  EXPECT_EQ(guaranteed.value().pod.numa_observed[0].amount, (ResourceAmounts{{"cpu", 4000}}));
  // The class the API server set, not one derived from the requests.
  auto burstable = ConvertPod(PodWith("Burstable"));
  ASSERT_TRUE(burstable.ok()) << burstable.error();
  EXPECT_FALSE(burstable.value().qos_guaranteed);
  EXPECT_TRUE(burstable.value().pod.numa_observed.empty());

  auto bad = ConvertPod(PodWith("Guaranteed", "node-1"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(),
            "metadata.annotations.kai.scheduler/numa-placement-observed: must be a JSON list of "
            "{zone, amount} (not JSON)");
}

json NodeObj(const std::string& name, const std::string& cpu) {
  return json{{"metadata", {{"name", name}}},
              {"status",
               {{"allocatable",
                 {{"cpu", cpu}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "0"}}}}}};
}

class NumaCacheTest : public ::testing::Test {
 protected:
  NumaCacheTest() : cache_("kai-scheduler") {
    for (int k = 0; k < kNumKinds; ++k) cache_.Replace(static_cast<Kind>(k), {});
    cache_.Replace(Kind::kQueue,
                   {json{{"metadata", {{"name", "q"}}},
                         {"spec", {{"resources", {{"cpu", {{"quota", -1}, {"limit", -1}}}}}}}}});
  }
  const Node* FindNode(const Cluster& c, const std::string& name) {
    auto it = c.node_index.find(name);
    return it == c.node_index.end() ? nullptr : &c.nodes[it->second];
  }
  WatchCache cache_;
};

TEST_F(NumaCacheTest, NodeResourceTopologyGivesItsNodeALayout) {
  // The topology may arrive before its node.
  cache_.Apply(Kind::kNodeResourceTopology, kube::EventType::kAdded, TwoZoneNrt("n1", 4));
  cache_.Apply(Kind::kNode, kube::EventType::kAdded, NodeObj("n1", "8"));
  cache_.Apply(Kind::kNode, kube::EventType::kAdded, NodeObj("n2", "8"));
  Snapshot s = cache_.Take();
  EXPECT_TRUE(s.errors.empty());
  ASSERT_NE(FindNode(*s.cluster, "n1"), nullptr);
  ASSERT_TRUE(FindNode(*s.cluster, "n1")->numa.has_value());
  EXPECT_EQ(FindNode(*s.cluster, "n1")->numa->zones.size(), 2u);
  EXPECT_FALSE(FindNode(*s.cluster, "n2")->numa.has_value());

  // A bad object is reported, naming it and the field, and its node has no layout.
  json bad = TwoZoneNrt("n2", 4);
  bad["zones"][0]["resources"][0]["available"] = "four";
  cache_.Apply(Kind::kNodeResourceTopology, kube::EventType::kAdded, bad);
  s = cache_.Take();
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(
      s.errors[0].ToString().rfind("NodeResourceTopology n2: zones[0].resources[0].available: "
                                   "malformed quantity",
                                   0),
      0u)
      << s.errors[0].ToString();
  EXPECT_FALSE(FindNode(*s.cluster, "n2")->numa.has_value());
  EXPECT_TRUE(FindNode(*s.cluster, "n1")->numa.has_value());

  // Deleted: the node has none any more.
  cache_.Apply(Kind::kNodeResourceTopology, kube::EventType::kDeleted, TwoZoneNrt("n1", 4));
  s = cache_.Take();
  EXPECT_FALSE(FindNode(*s.cluster, "n1")->numa.has_value());
}

json GuaranteedPod(const std::string& name, const std::string& cpu) {
  json pod = PodWith("Guaranteed");
  pod["metadata"]["name"] = name;
  pod["metadata"]["uid"] = "uid-" + name;
  pod["metadata"]["labels"]["kai.scheduler/queue"] = "q";
  pod["metadata"]["annotations"]["pod-group-name"] = "pg-" + name;
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu;
  pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] = cpu;
  return pod;
}

json PodGroup(const std::string& name) {
  return json{{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}}},
              {"spec", {{"queue", "q"}, {"minMember", 1}}}};
}

// A job is Guaranteed (what the numa plugin reads) when all its pods are.
TEST_F(NumaCacheTest, AJobIsGuaranteedWhenAllItsPodsAre) {
  json a0 = GuaranteedPod("a0", "2");
  json a1 = GuaranteedPod("a1", "2");
  a1["metadata"]["annotations"]["pod-group-name"] = "pg-a0";
  json b0 = GuaranteedPod("b0", "2");
  json b1 = GuaranteedPod("b1", "2");
  b1["metadata"]["annotations"]["pod-group-name"] = "pg-b0";
  b1["status"]["qosClass"] = "Burstable";
  cache_.Replace(Kind::kPodGroup, {PodGroup("pg-a0"), PodGroup("pg-b0")});
  cache_.Replace(Kind::kPod, {a0, a1, b0, b1});
  Snapshot s = cache_.Take();
  EXPECT_TRUE(s.errors.empty());
  std::map<std::string, std::string> qos;
  for (const Job& j : s.cluster->jobs) qos[j.name] = j.qos_class;
  EXPECT_EQ(qos, (std::map<std::string, std::string>{{"pg-a0", "Guaranteed"}, {"pg-b0", ""}}));
}

// The node the cycle binds `pod` to, with the numa plugin on or off.
std::string PlacedOn(WatchCache& cache, bool numa) {
  SchedulerConfig config = SchedulerConfig::Default();
  if (numa) {
    PluginConfig plugin;
    plugin.name = "numa";
    config.plugins.push_back(plugin);
  }
  auto scheduler = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  EXPECT_TRUE(scheduler.ok()) << scheduler.error();
  Snapshot snap = cache.Take();
  auto ssn = scheduler.value()->OpenSession(*snap.cluster, 0);
  scheduler.value()->RunActions(*ssn);
  if (ssn->binds().size() != 1) return "(" + std::to_string(ssn->binds().size()) + " binds)";
  return snap.cluster->nodes[ssn->binds()[0].node].name;
}

// Two nodes with room for the pod; on the smaller one (which binpacking prefers) no NUMA zone
// has 4 CPUs, so the kubelet could not align the pod there under single-numa-node.
TEST_F(NumaCacheTest, AGuaranteedPodGoesWhereItsTopologyCanAlignIt) {
  cache_.Replace(Kind::kNode, {NodeObj("small", "8"), NodeObj("large", "16")});
  json small_zones = json::array();
  for (int z = 0; z < 4; ++z) {
    small_zones.push_back(
        Zone("node-" + std::to_string(z), json::array({Resource("cpu", "2", "2")})));
  }
  cache_.Replace(Kind::kNodeResourceTopology, {Nrt("small", small_zones), TwoZoneNrt("large", 8)});
  cache_.Replace(Kind::kPodGroup, {PodGroup("pg-w")});
  cache_.Replace(Kind::kPod, {GuaranteedPod("w", "4")});
  EXPECT_EQ(PlacedOn(cache_, /*numa=*/false), "small");
  EXPECT_EQ(PlacedOn(cache_, /*numa=*/true), "large");
}

}  // namespace
}  // namespace gantry::cache
