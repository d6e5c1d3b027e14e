// The pod-grouper's grouping plugins, checked against cases converted as data from KAI's own
// podgrouper test tables (tests/unit/podgrouper_cases/*.yaml; each file names the KAI test file
// it comes from). Plus the PodGroup object the metadata becomes and the update rules.
//
// A case: `objects` (what the cluster holds: owners, PriorityClasses, ConfigMaps, PodGroups),
// `topOwner`, `pod`, optional `owners` (the owner chain, direct owner first; by default none,
// i.e. the plugin is called as KAI's tests call it) or `resolve: true` (resolve the owners from
// `objects` as the controller does, and apply the controller's skip rules), `options`, and
// either `expect` (fields of the metadata; only those given are compared) or `error` (a
// substring of the error).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "podgrouper/controller.h"
#include "podgrouper/grouper.h"
#include "podgrouper/json_util.h"
#include "podgrouper/metadata.h"

namespace gantry::podgrouper {
namespace {

kube::Object ToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      // YAML merge keys ("<<: *anchor"), which yaml-cpp keeps as a plain key: the anchored
      // map's entries, unless the map sets them itself.
      kube::Object out = kube::Object::object();
      for (const auto& kv : node) {
        if (kv.first.as<std::string>() != "<<") out[kv.first.as<std::string>()] = ToJson(kv.second);
      }
      for (const auto& kv : node) {
        if (kv.first.as<std::string>() != "<<") continue;
        const kube::Object merged = ToJson(kv.second);
        if (!merged.is_object()) continue;
        for (auto it = merged.begin(); it != merged.end(); ++it) {
          if (!out.contains(it.key())) out[it.key()] = it.value();
        }
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      kube::Object out = kube::Object::array();
      for (const auto& item : node) out.push_back(ToJson(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted in the file: a string
      if (s == "true") return true;
      if (s == "false") return false;
      if (auto n = ParseInt(s)) return *n;
      return s;
    }
    default:
      return nullptr;
  }
}

struct Case {
  std::string file;
  std::string name;
  YAML::Node node;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.file << ": " << c.name; }

std::vector<Case> LoadCases() {
  std::vector<Case> out;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(GANTRY_PODGROUPER_CASES)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    YAML::Node doc = YAML::LoadFile(path.string());
    for (const auto& c : doc["cases"]) {
      out.push_back({path.filename().string(), c["name"].as<std::string>(), c});
    }
  }
  return out;
}

void ExpectMetadata(const Metadata& md, const YAML::Node& expect, const std::string& where) {
  kube::Object e = ToJson(expect);
  SCOPED_TRACE(where);
  // Every key of `expect` is checked below; an unknown one (a typo, or a YAML merge key the
  // parser kept literally) would silently check nothing.
  static const std::set<std::string> known = {
      "name",           "namespace",       "minMember",
      "minSubGroup",    "queue",           "priorityClassName",
      "preemptibility", "preemptionDelay", "stalenessGracePeriod",
      "topology",       "owner",           "labels",
      "annotations",    "labelCount",      "annotationCount",
      "subGroups"};
  for (const auto& [key, value] : e.items()) {
    EXPECT_TRUE(known.count(key) > 0) << "unknown expectation " << key;
  }
  if (e.contains("name")) {
    EXPECT_EQ(md.name, e["name"].get<std::string>());
  }
  if (e.contains("namespace")) {
    EXPECT_EQ(md.ns, e["namespace"].get<std::string>());
  }
  if (e.contains("minMember")) {
    EXPECT_EQ(md.min_available, e["minMember"].get<int64_t>());
  }
  if (e.contains("minSubGroup") && e["minSubGroup"].is_null()) {
    EXPECT_FALSE(md.min_sub_group.has_value()) << "minSubGroup set";
  } else if (e.contains("minSubGroup")) {
    ASSERT_TRUE(md.min_sub_group.has_value());
    EXPECT_EQ(*md.min_sub_group, e["minSubGroup"].get<int64_t>());
  }
  if (e.contains("queue")) {
    EXPECT_EQ(md.queue, e["queue"].get<std::string>());
  }
  if (e.contains("priorityClassName")) {
    EXPECT_EQ(md.priority_class, e["priorityClassName"].get<std::string>());
  }
  if (e.contains("preemptibility")) {
    EXPECT_EQ(md.preemptibility, e["preemptibility"].get<std::string>());
  }
  if (e.contains("preemptionDelay")) {
    if (e["preemptionDelay"].is_null()) {
      EXPECT_FALSE(md.preemption_delay.has_value());
    } else {
      EXPECT_EQ(md.preemption_delay.value_or("<none>"), e["preemptionDelay"].get<std::string>());
    }
  }
  if (e.contains("stalenessGracePeriod")) {
    if (e["stalenessGracePeriod"].is_null()) {
      EXPECT_FALSE(md.staleness_grace_period.has_value());
    } else {
      EXPECT_EQ(md.staleness_grace_period.value_or("<none>"),
                e["stalenessGracePeriod"].get<std::string>());
    }
  }
  if (e.contains("topology")) {
    EXPECT_EQ(md.topology.topology, e["topology"].value("topology", ""));
    EXPECT_EQ(md.topology.required, e["topology"].value("required", ""));
    EXPECT_EQ(md.topology.preferred, e["topology"].value("preferred", ""));
  }
  if (e.contains("owner")) {
    for (const auto& [k, v] : e["owner"].items()) {
      std::string have = k == "kind"   ? md.owner.kind
                         : k == "name" ? md.owner.name
                         : k == "uid"  ? md.owner.uid
                                       : md.owner.api_version;
      EXPECT_EQ(have, v.get<std::string>()) << "owner." << k;
    }
  }
  for (const char* field : {"labels", "annotations"}) {
    if (!e.contains(field)) continue;
    const StringMap& have = std::string(field) == "labels" ? md.labels : md.annotations;
    for (const auto& [k, v] : e[field].items()) {
      auto it = have.find(k);
      if (v.is_null()) {
        EXPECT_EQ(it, have.end()) << field << " should not have " << k;
        continue;
      }
      ASSERT_NE(it, have.end()) << field << " lacks " << k;
      EXPECT_EQ(it->second, v.get<std::string>()) << field << "." << k;
    }
  }
  if (e.contains("labelCount")) {
    EXPECT_EQ(md.labels.size(), e["labelCount"].get<size_t>());
  }
  if (e.contains("annotationCount")) {
    EXPECT_EQ(md.annotations.size(), e["annotationCount"].get<size_t>());
  }
  if (e.contains("subGroups")) {
    const kube::Object& want = e["subGroups"];
    ASSERT_EQ(md.sub_groups.size(), want.size()) << "number of sub-groups";
    for (size_t i = 0; i < want.size(); ++i) {
      const SubGroupMetadata& sg = md.sub_groups[i];
      const kube::Object& w = want[i];
      SCOPED_TRACE("subGroups[" + std::to_string(i) + "]");
      EXPECT_EQ(sg.name, w["name"].get<std::string>());
      if (w.contains("minMember")) {
        EXPECT_EQ(sg.min_available, w["minMember"].get<int64_t>());
      }
      if (w.contains("minSubGroup")) {
        EXPECT_EQ(sg.min_sub_group.value_or(-1), w["minSubGroup"].get<int64_t>());
      } else {
        EXPECT_FALSE(sg.min_sub_group.has_value());
      }
      EXPECT_EQ(sg.parent.value_or(""), w.value("parent", ""));
      std::vector<std::string> pods;
      if (w.contains("pods")) pods = w["pods"].get<std::vector<std::string>>();
      EXPECT_EQ(sg.pods, pods);
      if (w.contains("topology")) {
        ASSERT_TRUE(sg.topology.has_value());
        EXPECT_EQ(sg.topology->topology, w["topology"].value("topology", ""));
        EXPECT_EQ(sg.topology->required, w["topology"].value("required", ""));
        EXPECT_EQ(sg.topology->preferred, w["topology"].value("preferred", ""));
      } else {
        EXPECT_FALSE(sg.topology.has_value());
      }
    }
  }
}

class KaiTables : public ::testing::TestWithParam<Case> {};

TEST_P(KaiTables, Case) {
  const Case& c = GetParam();
  const YAML::Node& n = c.node;
  FakeCluster cluster;
  for (const auto& o : n["objects"]) cluster.Add(ToJson(o));
  HubOptions options;
  if (auto o = n["options"]) {
    if (o["queueLabelKey"]) options.defaults.queue_label_key = o["queueLabelKey"].as<std::string>();
    if (o["nodePoolLabelKey"]) {
      options.defaults.node_pool_label_key = o["nodePoolLabelKey"].as<std::string>();
    }
    if (o["defaultsConfigMap"]) {
      options.defaults.defaults_config_map_namespace =
          o["defaultsConfigMap"]["namespace"].as<std::string>();
      options.defaults.defaults_config_map_name = o["defaultsConfigMap"]["name"].as<std::string>();
    }
    if (o["searchLegacy"]) options.search_legacy_pod_groups = o["searchLegacy"].as<bool>();
    if (o["genericKartaFallback"]) {
      options.generic_karta_fallback = o["genericKartaFallback"].as<bool>();
    }
    if (o["knativeGangSchedule"])
      options.knative_gang_schedule = o["knativeGangSchedule"].as<bool>();
  }
  if (auto f = n["forbidden"]) {
    for (const auto& kind : f) cluster.Forbid(kind.as<std::string>());
  }
  auto hub = MakeDefaultHub(options, cluster);
  kube::Object pod = ToJson(n["pod"]);
  if (!pod.contains("apiVersion")) pod["apiVersion"] = "v1";
  if (!pod.contains("kind")) pod["kind"] = "Pod";
  std::string where = c.file + ": " + c.name;

  Result<std::optional<Metadata>> got = std::optional<Metadata>{};
  if (n["resolve"] && n["resolve"].as<bool>()) {
    Reconciler reconciler(nullptr, *hub, ReconcilerOptions{});
    got = reconciler.Plan(pod);
  } else {
    kube::Object top = n["topOwner"] ? ToJson(n["topOwner"]) : pod;
    cluster.Add(top);
    std::vector<kube::Object> owners;
    for (const auto& o : n["owners"]) owners.push_back(ToJson(o));
    auto [group, version] = SplitApiVersion(kube::StringAt(top, {"apiVersion"}));
    // `grouper: group/version/Kind` calls that plugin whatever the top owner's kind (KAI's tests
    // call plugins directly with owners of made-up kinds).
    std::shared_ptr<const Grouper> found = hub->For(group, version, kube::StringAt(top, {"kind"}));
    const Grouper* chosen = found.get();
    if (n["grouper"]) {
      std::string gvk = n["grouper"].as<std::string>();
      auto first = gvk.find('/'), last = gvk.rfind('/');
      chosen = hub->Find(gvk.substr(0, first), gvk.substr(first + 1, last - first - 1),
                         gvk.substr(last + 1));
      ASSERT_NE(chosen, nullptr) << where << ": no plugin for " << gvk;
    }
    const Grouper& plugin = *chosen;
    if (n["plugin"]) {
      EXPECT_EQ(plugin.Name(), n["plugin"].as<std::string>()) << where;
    }
    auto md = plugin.Group(top, pod, owners);
    if (md.ok()) {
      got = std::optional<Metadata>{std::move(md).value()};
    } else {
      got = Error{md.error()};
    }
  }
  if (n["error"]) {
    ASSERT_FALSE(got.ok()) << where << ": expected an error";
    EXPECT_NE(got.error().find(n["error"].as<std::string>()), std::string::npos)
        << where << ": error was: " << got.error();
    return;
  }
  ASSERT_TRUE(got.ok()) << where << ": " << got.error();
  if (n["skipped"] && n["skipped"].as<bool>()) {
    EXPECT_FALSE(got.value().has_value()) << where << ": expected the pod to be skipped";
    return;
  }
  ASSERT_TRUE(got.value().has_value()) << where << ": the pod was skipped";
  ExpectMetadata(*got.value(), n["expect"], where);
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string out = info.param.file.substr(0, info.param.file.find('.')) + "_" + info.param.name;
  for (char& ch : out) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0) ch = '_';
  }
  return out + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(PodGrouper, KaiTables, ::testing::ValuesIn(LoadCases()), CaseName);

TEST(PodGrouperDuration, ParsesAndFormatsAsGo) {
  EXPECT_EQ(FormatGoDuration(ParseGoDuration("30s").value()), "30s");
  EXPECT_EQ(FormatGoDuration(ParseGoDuration("5m").value()), "5m0s");
  EXPECT_EQ(FormatGoDuration(ParseGoDuration("1h30m").value()), "1h30m0s");
  EXPECT_EQ(FormatGoDuration(ParseGoDuration("2.5s").value()), "2.5s");
  EXPECT_EQ(FormatGoDuration(ParseGoDuration("300ms").value()), "300ms");
  EXPECT_EQ(FormatGoDuration(ParseGoDuration("-10s").value()), "-10s");
  EXPECT_EQ(FormatGoDuration(0), "0s");
  EXPECT_FALSE(ParseGoDuration("abc").ok());
  EXPECT_FALSE(ParseGoDuration("10").ok());
  EXPECT_FALSE(ParseGoDuration("").ok());
}

Metadata SampleMetadata() {
  Metadata md;
  md.name = "pg-job-1-uid1";
  md.ns = "team-a";
  md.queue = "q1";
  md.priority_class = "train";
  md.min_available = 4;
  md.owner = {"batch/v1", "Job", "job-1", "uid1"};
  md.labels = {{"app", "x"}};
  md.annotations = {{kTopOwnerMetadataAnnotation, "name: job-1\n"}};
  md.sub_groups.push_back({.name = "worker", .min_available = 3});
  return md;
}

TEST(PodGrouperObject, CarriesSpecOwnerAndSubGroups) {
  kube::Object pg = PodGroupObject(SampleMetadata());
  EXPECT_EQ(pg["apiVersion"], "scheduling.run.ai/v2alpha2");
  EXPECT_EQ(pg["metadata"]["ownerReferences"][0]["kind"], "Job");
  EXPECT_EQ(pg["metadata"]["ownerReferences"][0]["uid"], "uid1");
  EXPECT_EQ(pg["spec"]["minMember"], 4);
  EXPECT_EQ(pg["spec"]["queue"], "q1");
  EXPECT_EQ(pg["spec"]["subGroups"][0]["name"], "worker");
  EXPECT_EQ(pg["spec"]["subGroups"][0]["minMember"], 3);
  EXPECT_FALSE(pg["spec"].contains("minSubGroup"));
}

TEST(PodGrouperUpdate, NothingToDoWhenTheServerCopyMatches) {
  Metadata md = SampleMetadata();
  kube::Object served = PodGroupObject(md);
  served["metadata"]["resourceVersion"] = "7";
  served["metadata"]["labels"]["extra"] = "kept";  // keys the metadata does not name stay
  served["status"] = {{"phase", "Running"}};
  EXPECT_FALSE(PodGroupUpdate(served, md, kDefaultNodePoolLabelKey, kDefaultQueueLabelKey));
}

TEST(PodGrouperUpdate, KeepsFieldsOtherComponentsOwn) {
  Metadata md = SampleMetadata();
  kube::Object served = PodGroupObject(md);
  served["spec"]["queue"] = "moved-by-admin";
  served["spec"]["markUnschedulable"] = true;
  served["metadata"]["labels"][kDefaultNodePoolLabelKey] = "pool-a";
  md.min_available = 5;
  auto update = PodGroupUpdate(served, md, kDefaultNodePoolLabelKey, kDefaultQueueLabelKey);
  ASSERT_TRUE(update);
  EXPECT_EQ((*update)["spec"]["minMember"], 5);
  EXPECT_EQ((*update)["spec"]["queue"], "moved-by-admin");
  EXPECT_EQ((*update)["spec"]["markUnschedulable"], true);
  EXPECT_EQ((*update)["metadata"]["labels"][kDefaultNodePoolLabelKey], "pool-a");
}

TEST(PodGrouperUpdate, ChangedOwnerIsWritten) {
  Metadata md = SampleMetadata();
  kube::Object served = PodGroupObject(md);
  md.owner.uid = "uid2";
  auto update = PodGroupUpdate(served, md, kDefaultNodePoolLabelKey, kDefaultQueueLabelKey);
  ASSERT_TRUE(update);
  EXPECT_EQ((*update)["metadata"]["ownerReferences"][0]["uid"], "uid2");
}

}  // namespace
}  // namespace gantry::podgrouper
