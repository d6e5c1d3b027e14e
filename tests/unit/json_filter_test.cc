// Field filters (kube/json_parse.h): a filtered parse builds exactly the full parse restricted to
// the kept paths (on a realistic pod and on random documents with random filters), malformed JSON
// is still rejected wherever it sits, and filters reach list items and watch objects (but not a
// watch ERROR's Status, nor a list's own metadata).
#include <gtest/gtest.h>

#include <random>

#include "binder/cache.h"
#include "cache/convert.h"
#include "cache/watch_cache.h"
#include "kube/client.h"
#include "kube/fake_transport.h"
#include "kube/json_parse.h"
#include "kube/watch_decoder.h"
#include "live/decisions.h"

namespace gantry::kube {
namespace {

using nlohmann::json;

FieldFilter Filter(const std::vector<std::string>& paths) {
  auto f = FieldFilter::FromPaths(paths);
  EXPECT_TRUE(f.ok()) << f.error();
  return f.ok() ? std::move(f).value() : FieldFilter();
}

// nlohmann's own parse, less metadata.managedFields: the reference the parser must match.
void StripManagedFields(json& v) {
  if (v.is_array()) {
    for (json& e : v) StripManagedFields(e);
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.key() == "metadata" && it.value().is_object()) it.value().erase("managedFields");
      StripManagedFields(it.value());
    }
  }
}
json Reference(const std::string& text) {
  json v = json::parse(text);
  StripManagedFields(v);
  return v;
}

json Parsed(const std::string& text, const FieldFilter* filter) {
  json out;
  EXPECT_TRUE(ParseFiltered(text, filter, out)) << text;
  return out;
}

// A pod as a kubelet leaves it: most of its bytes are read by nobody.
json RunningPod() {
  return json::parse(R"({
    "kind": "Pod", "apiVersion": "v1",
    "metadata": {"name": "p1", "namespace": "ns", "uid": "u1", "resourceVersion": "17",
      "labels": {"app": "x"}, "annotations": {"pod-group-name": "pg"},
      "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]},
    "spec": {
      "volumes": [{"name": "data", "emptyDir": {}}],
      "containers": [
        {"name": "main", "image": "busybox", "env": [{"name": "A", "value": "1"}],
         "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
         "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
        {"name": "side", "image": "busybox", "resources": {}}],
      "initContainers": [{"name": "init", "restartPolicy": "Always", "resources": {}}],
      "nodeName": "n1", "schedulerName": "kai-scheduler",
      "tolerations": [{"key": "k", "operator": "Exists"}]},
    "status": {"phase": "Running", "podIP": "10.0.0.1",
      "conditions": [{"type": "Ready", "status": "True"}],
      "containerStatuses": [{"name": "main", "ready": true, "state": {"running": {}}}]}
  })");
}

TEST(FieldFilterTest, KeepsOnlyTheNamedPaths) {
  FieldFilter f =
      Filter({"kind", "metadata", "spec.nodeName", "spec.containers.resources",
              "spec.initContainers.restartPolicy", "status.phase", "-metadata.annotations"});
  json want = json::parse(R"({
    "kind": "Pod",
    "metadata": {"name": "p1", "namespace": "ns", "uid": "u1", "resourceVersion": "17",
      "labels": {"app": "x"}},
    "spec": {
      "containers": [
        {"resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}},
        {"resources": {}}],
      "initContainers": [{"restartPolicy": "Always"}],
      "nodeName": "n1"},
    "status": {"phase": "Running"}
  })");
  EXPECT_EQ(Parsed(RunningPod().dump(), &f), want);
  // The reference restriction of the full parse says the same.
  EXPECT_EQ(f.Restrict(Reference(RunningPod().dump())), want);
  // No filter: everything but managedFields.
  json all = RunningPod();
  all["metadata"].erase("managedFields");
  EXPECT_EQ(Parsed(RunningPod().dump(2), nullptr), all);
}

TEST(FieldFilterTest, MalformedFieldsStayVisible) {
  // A scalar or array where the filter expects an object is kept as it is, so the reader
  // still reports the field.
  FieldFilter f = Filter({"spec.containers.resources"});
  EXPECT_EQ(Parsed(R"({"spec":{"containers":"oops"}})", &f),
            json::parse(R"({"spec":{"containers":"oops"}})"));
  EXPECT_EQ(Parsed(R"({"spec":{"containers":[1,{"image":"x","resources":2}]}})", &f),
            json::parse(R"({"spec":{"containers":[1,{"resources":2}]}})"));
  EXPECT_EQ(Parsed(R"({"spec":7,"other":1})", &f), json::parse(R"({"spec":7})"));
}

TEST(FieldFilterTest, RejectsInvalidJsonInDroppedParts) {
  FieldFilter f = Filter({"metadata.name"});
  json got;
  for (const char* bad :
       {"", " ", "{", R"({"spec":{"a":}})", R"({"status":[1,}})", R"({"metadata":{"name":"a"}} 2)",
        R"({"spec":{"a":"\x"}})", R"({"metadata":{"name":"a","labels":{"k" "v"}}})",
        "{\"spec\":\"a\x01\"}", "{\"spec\":\"\xff\"}", R"({"spec":"\ud800"})", R"({"spec":01})",
        R"({"spec":[1,2,]})", R"({"spec":tru})"}) {
    EXPECT_FALSE(ParseFiltered(bad, &f, got)) << bad;
    EXPECT_FALSE(ParseFiltered(bad, nullptr, got)) << bad;
    EXPECT_FALSE(json::accept(bad)) << bad;
  }
}

TEST(FieldFilterTest, NumbersStringsAndKeysAsNlohmannBuildsThem) {
  const std::string text =
      R"({"n":[0,5,-5,-0,1.5,-2.25,1e3,2E-2,18446744073709551615,-9223372036854775808,)"
      R"(9223372036854775807,9223372036854775808],"s":["\u00e9\ud83d\ude00\n\"\\/",)"
      R"("cafÃ©",""],"k":{"b":1,"a":2,"b":3},"t":[true,false,null,{},[]]})";
  const json want = json::parse(text);
  json got;
  ASSERT_TRUE(ParseWithoutManagedFields(text, got));
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.dump(), want.dump());
  for (size_t i = 0; i < want["n"].size(); ++i) {
    // The one difference: -0 is an unsigned 0 (equal, and written "0", all the same).
    if (i == 3) continue;
    EXPECT_EQ(got["n"][i].type(), want["n"][i].type()) << want["n"][i].dump();
  }
  EXPECT_EQ(got["k"]["b"], 3);  // a repeated key: the last wins
}

TEST(FieldFilterTest, BadPathsAreNamed) {
  for (const std::vector<std::string>& paths :
       std::vector<std::vector<std::string>>{{""},
                                             {"a..b"},
                                             {"a."},
                                             {"-"},
                                             {"a", "-b"},
                                             {"a.b", "-a"},
                                             {"a.b", "-a.b"},
                                             {"a.b.c", "-a.b"}}) {
    auto f = FieldFilter::FromPaths(paths);
    ASSERT_FALSE(f.ok()) << paths.back();
    EXPECT_NE(f.error().find("field filter"), std::string::npos) << f.error();
  }
  // Drops inside a value kept whole, at any depth; a path kept twice or inside a kept one.
  EXPECT_TRUE(FieldFilter::FromPaths({"a", "-a.b.c", "-a.b", "a.x", "-a.b.d"}).ok());
}

// Random documents over a small key alphabet (including "metadata" and "managedFields", so the
// managedFields rule meets the filter) against random filters over the same alphabet.
json RandomValue(std::mt19937& rng, int depth) {
  static const char* keys[] = {"a", "b", "c", "metadata", "managedFields"};
  std::uniform_int_distribution<int> kind(0, depth > 0 ? 5 : 3);
  switch (kind(rng)) {
    case 0:
      return nullptr;
    case 1:
      if (rng() % 3 == 0) return (static_cast<double>(rng() % 1000) - 500) / 8;
      return static_cast<int>(rng() % 100) - 50;
    case 2:
      return std::string(1 + rng() % 3, static_cast<char>('x' + rng() % 3));
    case 3:
      return rng() % 2 == 0;
    case 4: {
      json arr = json::array();
      for (int i = static_cast<int>(rng() % 3); i > 0; --i)
        arr.push_back(RandomValue(rng, depth - 1));
      return arr;
    }
    default: {
      json obj = json::object();
      for (int i = static_cast<int>(rng() % 4); i > 0; --i) {
        obj[keys[rng() % 5]] = RandomValue(rng, depth - 1);
      }
      return obj;
    }
  }
}

std::string RandomPath(std::mt19937& rng) {
  static const char* keys[] = {"a", "b", "c", "metadata", "managedFields"};
  std::string path = keys[rng() % 5];
  for (int i = static_cast<int>(rng() % 3); i > 0; --i) path += std::string(".") + keys[rng() % 5];
  return path;
}

TEST(FieldFilterTest, FilteredParseIsTheFullParseRestricted) {
  std::mt19937 rng(20261130);
  int filters = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> paths;
    for (int i = 1 + static_cast<int>(rng() % 3); i > 0; --i) paths.push_back(RandomPath(rng));
    for (int i = static_cast<int>(rng() % 3); i > 0; --i) paths.push_back("-" + RandomPath(rng));
    auto f = FieldFilter::FromPaths(paths);
    if (!f.ok()) continue;  // a drop outside the kept values
    ++filters;
    json doc = RandomValue(rng, 5);
    const std::string text = doc.dump(rng() % 2 == 0 ? -1 : 1);
    json full = Reference(text), got;
    ASSERT_TRUE(ParseWithoutManagedFields(text, got));
    ASSERT_EQ(got, full) << text;
    ASSERT_TRUE(ParseFiltered(text, &f.value(), got));
    ASSERT_EQ(got, f.value().Restrict(full)) << text;
    // Under(key) applies the filter to that key's value only.
    const std::string wrapped = json{{"type", "ADDED"}, {"object", doc}}.dump();
    FieldFilter under = f.value().Under("object");
    ASSERT_TRUE(ParseFiltered(wrapped, &under, got));
    ASSERT_EQ(got, (json{{"type", "ADDED"}, {"object", f.value().Restrict(full)}})) << wrapped;
  }
  EXPECT_GT(filters, 1000);
}

TEST(FieldFilterTest, WatchObjectsAreFilteredButErrorsKeptWhole) {
  auto f = std::make_shared<const FieldFilter>(Filter({"metadata", "status.phase"}));
  WatchDecoder d(f.get());
  std::vector<WatchEvent> out;
  json added = {{"type", "ADDED"}, {"object", RunningPod()}};
  json error = {
      {"type", "ERROR"},
      {"object", {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}, {"message", "old"}}}};
  ASSERT_TRUE(d.Feed(added.dump() + "\n" + error.dump() + "\n", out).ok());
  ASSERT_EQ(out.size(), 2u);
  json want_meta = RunningPod()["metadata"];
  want_meta.erase("managedFields");
  EXPECT_EQ(out[0].object, (json{{"metadata", want_meta}, {"status", {{"phase", "Running"}}}}));
  EXPECT_EQ(out[1].type, EventType::kError);
  EXPECT_EQ(out[1].object, error["object"]);
  // A malformed line is still an error.
  EXPECT_FALSE(d.Feed("{\"type\":\"ADDED\",\"object\":{\"spec\":[}}\n", out).ok());
}

TEST(FieldFilterTest, ListItemsAreFiltered) {
  auto fake = std::make_shared<FakeTransport>();
  json list = {{"kind", "PodList"},
               {"metadata", {{"resourceVersion", "9"}}},
               {"items", {RunningPod(), RunningPod()}}};
  fake->PushResponse(HttpResponse{200, list.dump()});
  Client client(fake, {.qps = 0});
  ListOptions options;
  options.filter = std::make_shared<const FieldFilter>(Filter({"metadata.name", "spec.nodeName"}));
  auto got = client.ListAll(resources::kPods, "", options);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  json item = {{"metadata", {{"name", "p1"}}}, {"spec", {{"nodeName", "n1"}}}};
  EXPECT_EQ(got.value(), (json{{"kind", "PodList"},
                               {"metadata", {{"resourceVersion", "9"}}},
                               {"items", {item, item}}}));
}

// A pod using every field the scheduler's converter reads.
json RichPod() {
  json pod = RunningPod();
  pod["metadata"]["creationTimestamp"] = "2026-11-30T10:00:00Z";
  pod["metadata"]["labels"]["kai.scheduler/subgroup-name"] = "workers";
  pod["metadata"]["annotations"]["gpu-fraction"] = "0.5";
  pod["spec"]["containers"][0]["resources"] = {
      {"requests", {{"cpu", "500m"}, {"memory", "1Gi"}, {"nvidia.com/mig-1g.5gb", "1"}}}};
  pod["spec"]["initContainers"] = json::parse(R"([
      {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "2"}},
       "ports": [{"containerPort": 9000, "hostPort": 9000, "protocol": "UDP"}]},
      {"name": "init", "resources": {"requests": {"cpu": "3", "memory": "2Gi"}},
       "envFrom": [{"configMapRef": {"name": "init-env"}}],
       "volumeMounts": [{"name": "settings", "mountPath": "/etc/s"}]}])");
  pod["spec"]["containers"][0]["ports"] =
      json::parse(R"([{"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"}])");
  pod["spec"]["containers"][0]["env"] = json::parse(
      R"([{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "a"}}}])");
  pod["spec"]["ephemeralContainers"] =
      json::parse(R"([{"name": "debug", "envFrom": [{"configMapRef": {"name": "debug-env"}}]}])");
  pod["spec"]["volumes"] = json::parse(R"([{"name": "settings", "configMap": {"name": "cfg"}},
      {"name": "bundle", "projected": {"sources": [{"configMap": {"name": "proj"}}]}}])");
  pod["spec"]["overhead"] = {{"cpu", "100m"}};
  pod["spec"]["nodeSelector"] = {{"zone", "a"}};
  pod["spec"]["affinity"] = json::parse(R"({
      "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}]}},
      "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}]},
      "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "y"}}, "topologyKey": "host",
         "namespaces": ["ns"]}],
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "z"}},
                                            "topologyKey": "host"}}]}})");
  pod["spec"]["tolerations"] =
      json::parse(R"([{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}])");
  pod["spec"]["schedulingGates"] = json::parse(R"([{"name": "wait"}])");
  pod["spec"]["resourceClaims"] =
      json::parse(R"([{"name": "gpu", "resourceClaimTemplateName": "tmpl"}])");
  pod["spec"].erase("nodeName");
  pod["status"] = json::parse(R"({"phase": "Pending", "nominatedNodeName": "n2",
      "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p1-gpu-abc"}],
      "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                      "message": "no room", "lastTransitionTime": "2026-11-30T10:00:01Z"}]})");
  return pod;
}

void ExpectSameRecord(const cache::PodRecord& a, const cache::PodRecord& b) {
  EXPECT_EQ(a.pod.name, b.pod.name);
  EXPECT_EQ(a.pod.namespace_, b.pod.namespace_);
  EXPECT_EQ(a.pod.uid, b.pod.uid);
  EXPECT_EQ(a.pod.request, b.pod.request);
  EXPECT_EQ(a.pod.gpu_kind, b.pod.gpu_kind);
  EXPECT_EQ(a.pod.gpu_fraction, b.pod.gpu_fraction);
  EXPECT_EQ(a.pod.mig_gpus, b.pod.mig_gpus);
  EXPECT_EQ(a.pod.labels.items(), b.pod.labels.items());
  EXPECT_EQ(a.pod.node_selector.items(), b.pod.node_selector.items());
  EXPECT_EQ(a.pod.required_node_affinity.size(), b.pod.required_node_affinity.size());
  EXPECT_EQ(a.pod.pod_affinity.size(), b.pod.pod_affinity.size());
  EXPECT_EQ(a.pod.pod_anti_affinity.size(), b.pod.pod_anti_affinity.size());
  EXPECT_EQ(a.pod.preferred_pod_affinity.size(), b.pod.preferred_pod_affinity.size());
  ASSERT_EQ(a.pod.preferred_pod_anti_affinity.size(), b.pod.preferred_pod_anti_affinity.size());
  for (size_t i = 0; i < a.pod.preferred_pod_anti_affinity.size(); ++i) {
    EXPECT_EQ(a.pod.preferred_pod_anti_affinity[i].weight,
              b.pod.preferred_pod_anti_affinity[i].weight);
  }
  ASSERT_EQ(a.pod.tolerations.size(), b.pod.tolerations.size());
  for (size_t i = 0; i < a.pod.tolerations.size(); ++i) {
    EXPECT_EQ(a.pod.tolerations[i].key, b.pod.tolerations[i].key);
    EXPECT_EQ(a.pod.tolerations[i].value, b.pod.tolerations[i].value);
    EXPECT_EQ(a.pod.tolerations[i].effect, b.pod.tolerations[i].effect);
  }
  EXPECT_EQ(a.pod.host_ports, b.pod.host_ports);
  EXPECT_EQ(a.pod.config_maps, b.pod.config_maps);
  EXPECT_EQ(a.pod.status, b.pod.status);
  EXPECT_EQ(a.extended, b.extended);
  EXPECT_EQ(a.node_name, b.node_name);
  EXPECT_EQ(a.nominated_node_name, b.nominated_node_name);
  EXPECT_EQ(a.scheduler_name, b.scheduler_name);
  EXPECT_EQ(a.pod_group, b.pod_group);
  EXPECT_EQ(a.subgroup, b.subgroup);
  EXPECT_EQ(a.creation_ms, b.creation_ms);
  EXPECT_EQ(a.claims, b.claims);
}

TEST(FieldFilterTest, SchedulerPodFieldsKeepWhatIsConverted) {
  auto fields = cache::FieldsOf(cache::Kind::kPod);
  ASSERT_NE(fields, nullptr);
  for (const json& pod : {RunningPod(), RichPod()}) {
    const json filtered = Parsed(pod.dump(), fields.get());
    EXPECT_LT(filtered.dump().size(), pod.dump().size());
    auto full = cache::ConvertPod(pod);
    auto pruned = cache::ConvertPod(filtered);
    ASSERT_TRUE(full.ok()) << full.error();
    ASSERT_TRUE(pruned.ok()) << pruned.error();
    ExpectSameRecord(full.value(), pruned.value());
    if (pod == RichPod()) {
      EXPECT_EQ(pruned.value().pod.host_ports.size(), 2u);
      // "bundle" is not mounted: its projected source does not count.
      EXPECT_EQ(pruned.value().pod.config_maps,
                (std::vector<std::string>{"cfg", "init-env", "env-cm", "debug-env"}));
    }
    // The Unschedulable condition already there is still recognised (nothing re-sent).
    EXPECT_EQ(live::PodUnschedulablePatch(pod, "no room", "now").has_value(),
              live::PodUnschedulablePatch(filtered, "no room", "now").has_value());
  }
  EXPECT_FALSE(live::PodUnschedulablePatch(Parsed(RichPod().dump(), fields.get()), "no room", "t"));
  EXPECT_FALSE(Parsed(RichPod().dump(), fields.get())["status"].contains("podIP"));
  // A malformed field is reported the same way.
  json bad = RichPod();
  bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  auto full = cache::ConvertPod(bad);
  auto pruned = cache::ConvertPod(Parsed(bad.dump(), fields.get()));
  ASSERT_FALSE(full.ok());
  ASSERT_FALSE(pruned.ok());
  EXPECT_EQ(full.error(), pruned.error());
  // Other kinds are built whole, but for ConfigMaps, of which only the name is read.
  EXPECT_EQ(cache::FieldsOf(cache::Kind::kBindRequest), nullptr);
  const json config_map = json::parse(R"({"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "cfg", "namespace": "ns", "resourceVersion": "7",
                   "annotations": {"a": "b"}},
      "data": {"big": "...."}})");
  const json kept = Parsed(config_map.dump(), cache::FieldsOf(cache::Kind::kConfigMap).get());
  EXPECT_EQ(kept, json::parse(R"({"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "cfg", "namespace": "ns", "resourceVersion": "7"}})"));
  auto record = cache::ConvertConfigMap(kept);
  ASSERT_TRUE(record.ok()) << record.error();
  EXPECT_EQ(record.value().name, "cfg");
}

TEST(FieldFilterTest, BinderPodFieldsKeepWhatTheBinderReads) {
  auto fields = binder::BinderCache::PodFields();
  for (const json& pod : {RunningPod(), RichPod()}) {
    const json filtered = Parsed(pod.dump(), fields.get());
    json want = binder::BinderCache::TrimPod(pod);
    want["metadata"].erase("managedFields");
    want["status"].erase("podIP");  // what the filter leaves out besides TrimPod
    EXPECT_EQ(binder::BinderCache::TrimPod(filtered), want);
    EXPECT_EQ(filtered["spec"], pod["spec"]);
  }
}

}  // namespace
}  // namespace gantry::kube
