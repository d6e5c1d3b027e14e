// The Karta fallback's pieces the data tables cannot express (podgrouper_cases/karta.yaml holds
// KAI's grouper_test.go / hub_test.go cases): the path subset, how often the hub lists Kartas
// (KAI's hub_test.go: not cached; a missing CRD not asked again for a minute), the multiple-Kartas
// error, and the grouper without gang-scheduling instructions.
#include <gtest/gtest.h>

#include "podgrouper/grouper.h"
#include "podgrouper/plugins/karta.h"
#include "podgrouper/plugins/karta_path.h"

namespace gantry::podgrouper::karta {
namespace {

kube::Object J(const char* text) { return kube::Object::parse(text); }

TEST(KartaPath, FieldsKeysIndexesAndComparisons) {
  kube::Object pod = J(R"({"metadata": {"labels": {"job-name": "a", "role": "worker"}},
                          "spec": {"containers": [{"name": "c0"}, {"name": "c1"}], "n": 2}})");
  EXPECT_EQ(EvaluatePath(".metadata.labels.role", pod).value(), "worker");
  EXPECT_EQ(EvaluatePath(R"(.metadata.labels["job-name"])", pod).value(), "a");
  EXPECT_EQ(EvaluatePath(R"(.["metadata"].labels."job-name")", pod).value(), "a");
  EXPECT_EQ(EvaluatePath(".spec.containers[1].name", pod).value(), "c1");
  EXPECT_EQ(EvaluatePath(".spec.containers[-1].name", pod).value(), "c1");
  EXPECT_TRUE(EvaluatePath(".metadata.missing.deeper", pod).value().is_null());
  EXPECT_TRUE(EvaluatePath(".spec.containers[5]", pod).value().is_null());
  EXPECT_EQ(EvaluatePath(R"(.metadata.labels.role == "worker")", pod).value(), true);
  EXPECT_EQ(EvaluatePath(R"(.metadata.labels.role != "worker")", pod).value(), false);
  EXPECT_EQ(EvaluatePath(".spec.n == 2.0", pod).value(), true);
  EXPECT_EQ(EvaluatePath(".", pod).value(), pod);
}

TEST(KartaPath, BadPathsAreNamed) {
  auto recursive = Path::Parse(".. | .metadata.name");
  ASSERT_FALSE(recursive.ok());
  EXPECT_NE(recursive.error().find("\".. | .metadata.name\""), std::string::npos)
      << recursive.error();
  EXPECT_FALSE(Path::Parse("metadata.name").ok());
  EXPECT_FALSE(Path::Parse(".a[\"x\"").ok());
  EXPECT_FALSE(Path::Parse(".a | length").ok());
  auto wrong_type = EvaluatePath(".spec.n.x", J(R"({"spec": {"n": 2}})"));
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.error().find(".spec.n"), std::string::npos) << wrong_type.error();
}

kube::Object TestKarta(const std::string& name) {
  kube::Object k = J(R"({"apiVersion": "run.ai/v1alpha1", "kind": "Karta",
    "metadata": {"labels": {"run.ai/karta-group": "test.example.com",
                            "run.ai/karta-version": "v1", "run.ai/karta-kind": "TestResource"}},
    "spec": {"structureDefinition": {
      "rootComponent": {"name": "test-root",
                        "kind": {"group": "test.example.com", "version": "v1", "kind": "TestResource"}},
      "childComponents": [{"name": "test-component", "ownerRef": "test-root",
        "specDefinition": {"podTemplateSpecPath": ".spec.template"},
        "scaleDefinition": {"replicasPath": ".spec.replicas"},
        "podSelector": {"componentTypeSelector": {"keyPath": ".metadata.labels.role", "value": "worker"}}}]},
      "instructions": {"gangScheduling": {"podGroup": {"name": "test"}}}}})");
  k["metadata"]["name"] = name;
  return k;
}

TEST(KartaHub, FoundKartaIsNotCached) {
  FakeCluster cluster;
  cluster.Add(TestKarta("karta"));
  auto hub = MakeDefaultHub(HubOptions{}, cluster);
  EXPECT_EQ(hub->For("test.example.com", "v1", "TestResource")->Name(), "Karta Grouper");
  EXPECT_EQ(hub->For("test.example.com", "v1", "TestResource")->Name(), "Karta Grouper");
  EXPECT_EQ(cluster.karta_lists(), 2);
}

TEST(KartaHub, MissingCrdIsNotAskedAgainForAMinute) {
  FakeCluster cluster;
  cluster.RemoveKartaCrd();
  auto defaults = std::make_shared<DefaultGrouper>(DefaultGrouperOptions{}, cluster);
  KartaFallback fallback(cluster, defaults);
  EXPECT_EQ(fallback.For("test.example.com", "v1", "TestResource"), nullptr);
  EXPECT_EQ(fallback.For("test.example.com", "v1", "TestResource"), nullptr);
  EXPECT_EQ(cluster.karta_lists(), 1);
  EXPECT_TRUE(fallback.crd_missing());
  fallback.ForgetMissingCrd();  // the minute has passed
  EXPECT_EQ(fallback.For("test.example.com", "v1", "TestResource"), nullptr);
  EXPECT_EQ(cluster.karta_lists(), 2);
  EXPECT_TRUE(fallback.crd_missing());
}

TEST(KartaHub, MultipleKartasWithGangSchedulingIsAnError) {
  FakeCluster cluster;
  cluster.Add(TestKarta("first-karta"));
  cluster.Add(TestKarta("second-karta"));
  auto defaults = std::make_shared<DefaultGrouper>(DefaultGrouperOptions{}, cluster);
  KartaFallback fallback(cluster, defaults);
  auto got = fallback.KartaFor("test.example.com", "v1", "TestResource");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().find("found multiple Kartas with gang scheduling instructions"),
            std::string::npos);
  EXPECT_EQ(fallback.For("test.example.com", "v1", "TestResource"), nullptr);
}

TEST(KartaGrouper, WithoutGangSchedulingFallsBackToDefaultGrouper) {
  FakeCluster cluster;
  kube::Object object = TestKarta("karta");
  object["spec"]["instructions"] = kube::Object::object();
  auto karta = Karta::FromObject(object);
  ASSERT_TRUE(karta.ok()) << karta.error();
  auto defaults = std::make_shared<DefaultGrouper>(DefaultGrouperOptions{}, cluster);
  KartaGrouper grouper(karta.value(), defaults);
  kube::Object top = J(R"({"apiVersion": "test.example.com/v1", "kind": "TestResource",
      "metadata": {"name": "tr", "namespace": "ns", "uid": "u1"}, "spec": {"replicas": 3}})");
  kube::Object pod = J(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "p", "namespace": "ns", "labels": {"kai.scheduler/queue": "q"}}})");
  auto got = grouper.Group(top, pod, {});
  auto want = defaults->Group(top, pod, {});
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_EQ(got.value().name, want.value().name);
  EXPECT_EQ(got.value().min_available, want.value().min_available);
  EXPECT_EQ(got.value().queue, "q");
  EXPECT_TRUE(got.value().sub_groups.empty());
}

TEST(KartaGrouper, ReplicaCountOfTheWrongTypeNamesTheComponentAndPath) {
  FakeCluster cluster;
  auto karta = Karta::FromObject(TestKarta("karta"));
  ASSERT_TRUE(karta.ok());
  auto defaults = std::make_shared<DefaultGrouper>(DefaultGrouperOptions{}, cluster);
  KartaGrouper grouper(karta.value(), defaults);
  kube::Object top = J(R"({"apiVersion": "test.example.com/v1", "kind": "TestResource",
      "metadata": {"name": "tr", "namespace": "ns", "uid": "u1"}, "spec": {"replicas": "three"}})");
  kube::Object pod =
      J(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}})");
  auto got = grouper.Group(top, pod, {});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().find("test-component"), std::string::npos) << got.error();
  EXPECT_NE(got.error().find(".spec.replicas"), std::string::npos) << got.error();
}

}  // namespace
}  // namespace gantry::podgrouper::karta
