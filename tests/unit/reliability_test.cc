// Regression tests for hostile or malformed input: every reproducing input is a file under
// data/reliability/ (or, for inputs whose point is their size, generated here). Each must be
// refused with an error that names the object's field, or handled within bounds; none may
// crash, wrap around or run away.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include "cache/convert.h"
#include "cli/commands.h"
#include "kube/config.h"
#include "kube/time_format.h"
#include "model/resources.h"
#include "scenario/runner.h"
#include "scenario/scenario.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"
#include "util/checked_number.h"
#include "util/read_file.h"

namespace gantry {
namespace {

using cache::Object;

std::string DataPath(const std::string& name) {
  return std::string(GANTRY_RELIABILITY_DATA_DIR) + "/" + name;
}

Object LoadObject(const std::string& name) {
  std::ifstream in(DataPath(name));
  EXPECT_TRUE(in) << name;
  return Object::parse(in);
}

// The conversion of `file` fails and its error names `field`.
template <typename Convert>
void ExpectRefused(Convert convert, const std::string& file, const std::string& field) {
  auto r = convert(LoadObject(file));
  ASSERT_FALSE(r.ok()) << file << " was accepted";
  EXPECT_NE(r.error().find(field), std::string::npos) << file << ": " << r.error();
}

TEST(CheckedNumber, ConvertsOnlyWholeInRangeValues) {
  EXPECT_EQ(ToInteger<int32_t>(7.0), 7);
  EXPECT_EQ(ToInteger<int32_t>(-2147483648.0), std::numeric_limits<int32_t>::min());
  EXPECT_FALSE(ToInteger<int32_t>(2147483648.0));
  EXPECT_FALSE(ToInteger<int32_t>(0.5));
  EXPECT_FALSE(ToInteger<int32_t>(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(ToInteger<int32_t>(std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(ToInteger<int64_t>(9.3e18));
  EXPECT_EQ(ToInteger<int64_t>(-9223372036854775808.0), std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(ToIntegerIn<int32_t>(5, 0, 4));
  EXPECT_EQ(NarrowIn<int32_t>(int64_t{4294967297}, 0, 10), std::nullopt);
}

// The quota-bypass inputs: a GPU count that wrapped to -2^31, and GPU memory past int64.
TEST(ConvertRanges, PodAnnotationsThatWouldWrapAreRefused) {
  ExpectRefused(cache::ConvertPod, "pod-fraction-num-devices-2147483648.json",
                "metadata.annotations.gpu-fraction-num-devices");
  ExpectRefused(cache::ConvertPod, "pod-fraction-num-devices-huge.json",
                "metadata.annotations.gpu-fraction-num-devices");
  ExpectRefused(cache::ConvertPod, "pod-gpu-memory-1e19.json", "metadata.annotations.gpu-memory");
}

TEST(ConvertRanges, NodeQueuePodGroupBindRequestAndClaimNumbersAreRangeChecked) {
  ExpectRefused(cache::ConvertNode, "node-gpu-count-label-1e12.json",
                "metadata.labels.nvidia.com/gpu.count");
  ExpectRefused(cache::ConvertNode, "node-allocatable-gpus-1e15.json",
                "status.allocatable.nvidia.com/gpu");
  ExpectRefused(cache::ConvertNode, "node-gpu-memory-label-1e30.json",
                "metadata.labels.nvidia.com/gpu.memory");
  ExpectRefused(cache::ConvertQueue, "queue-priority-1e300.json", "spec.priority");
  ExpectRefused(cache::ConvertPodGroup, "podgroup-minmember-1e10.json", "spec.minMember");
  ExpectRefused(cache::ConvertPodGroup, "podgroup-subgroup-minmember-negative.json",
                "spec.subGroups[0].minMember");
  ExpectRefused(cache::ConvertBindRequest, "bindrequest-backofflimit-1e20.json",
                "spec.backoffLimit");
  ExpectRefused(cache::ConvertBindRequest, "bindrequest-failedattempts-negative.json",
                "status.failedAttempts");
  ExpectRefused(cache::ConvertPriorityClass, "priorityclass-value-2pow32.json", "value");
  // A claim count of 2e8 used to allocate one string per device (4 GiB).
  ExpectRefused(cache::ConvertResourceClaim, "resourceclaim-count-2e8.json",
                "spec.devices.requests[0].exactly.count");
  ExpectRefused(cache::ConvertResourceSlice, "resourceslice-129-devices.json", "spec.devices");
}

TEST(ConvertRanges, TimestampsBeyondTheClockSaturateInsteadOfOverflowing) {
  auto r = cache::ConvertPodGroup(LoadObject("podgroup-last-start-year-9999.json"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_TRUE(r.value().last_start_ms.has_value());
  EXPECT_GT(*r.value().last_start_ms, int64_t{9'000'000'000'000});  // after 2255, not negative

  using kube::ParseTime;
  auto max = std::chrono::system_clock::time_point::max();
  auto min = std::chrono::system_clock::time_point::min();
  EXPECT_EQ(ParseTime("9999-12-31T23:59:59Z"), max);
  EXPECT_EQ(ParseTime("0000-01-01T00:00:00Z"), min);
  EXPECT_EQ(ParseTime("1677-01-01T00:00:00Z"), min);
  // Inside the range, offsets are honoured and lower-case separators accepted (RFC 3339).
  EXPECT_EQ(ParseTime("2026-01-01T01:30:00+01:30"), ParseTime("2026-01-01T00:00:00Z"));
  EXPECT_EQ(ParseTime("2025-12-31T22:00:00-02:00"), ParseTime("2026-01-01T00:00:00Z"));
  EXPECT_EQ(ParseTime("2026-01-01t00:00:00z"), ParseTime("2026-01-01T00:00:00Z"));
  EXPECT_FALSE(ParseTime("2026-01-01T00:00:00+24:00"));
  EXPECT_FALSE(ParseTime("2026-01-01T00:00:00+0100"));
}

TEST(ConvertRanges, MigProfilesWithHugeNumbersAreNotMigResources) {
  int g = 0, m = 0;
  EXPECT_TRUE(ParseMigProfile("nvidia.com/mig-3g.40gb", g, m));
  EXPECT_EQ(g, 3);
  EXPECT_EQ(m, 40);
  EXPECT_FALSE(ParseMigProfile("nvidia.com/mig-99999999999g.1gb", g, m));
  EXPECT_FALSE(ParseMigProfile("nvidia.com/mig-1g.99999999999999999999gb", g, m));
  EXPECT_FALSE(ParseMigProfile("nvidia.com/mig-+1g.5gb", g, m));
  EXPECT_FALSE(ParseMigProfile("nvidia.com/mig- 1g.5gb", g, m));
  EXPECT_FALSE(ParseMigProfile("nvidia.com/mig-1g.5gbx", g, m));
  EXPECT_FALSE(ParseMigProfile("nvidia.com/mig-0g.5gb", g, m));
}

Object PodGroupWithSubGroups(const std::vector<std::pair<std::string, std::string>>& groups) {
  Object subs = Object::array();
  for (const auto& [name, parent] : groups) {
    Object s = {{"name", name}, {"minMember", 1}};
    if (!parent.empty()) s["parent"] = parent;
    subs.push_back(s);
  }
  return {{"metadata", {{"name", "pg"}, {"namespace", "ns"}}},
          {"spec", {{"queue", "q"}, {"minMember", 1}, {"subGroups", subs}}}};
}

// A chain of 4,000 sub-groups took 147 s (the parent check was cubic); now it is refused at the
// depth bound after one linear pass, and a wide tree of the same size converts.
TEST(ConvertBounds, SubGroupChainsAreCheckedLinearlyAndBounded) {
  std::vector<std::pair<std::string, std::string>> chain;
  chain.reserve(4000);
  for (int i = 0; i < 4000; ++i) {
    // Listed leaf first: the worst order for a walk that restarts from every sub-group.
    chain.emplace_back("g" + std::to_string(3999 - i),
                       i == 3999 ? "" : "g" + std::to_string(3998 - i));
  }
  auto deep = cache::ConvertPodGroup(PodGroupWithSubGroups(chain));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().find("deeper than 32 levels"), std::string::npos) << deep.error();

  std::vector<std::pair<std::string, std::string>> wide{{"root", ""}};
  for (int i = 0; i < 4000; ++i) wide.emplace_back("leaf" + std::to_string(i), "root");
  auto ok = cache::ConvertPodGroup(PodGroupWithSubGroups(wide));
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok.value().sub_groups.size(), 4001u);

  auto cycle = cache::ConvertPodGroup(PodGroupWithSubGroups({{"a", "b"}, {"b", "c"}, {"c", "a"}}));
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.error().find("cycle"), std::string::npos) << cycle.error();
  auto unknown = cache::ConvertPodGroup(PodGroupWithSubGroups({{"a", "nope"}}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("spec.subGroups[0].parent"), std::string::npos);

  std::vector<std::pair<std::string, std::string>> at_bound;
  at_bound.reserve(kMaxSubGroupDepth);
  for (int i = 0; i < kMaxSubGroupDepth; ++i) {
    at_bound.emplace_back("g" + std::to_string(i), i == 0 ? "" : "g" + std::to_string(i - 1));
  }
  auto bound = cache::ConvertPodGroup(PodGroupWithSubGroups(at_bound));
  EXPECT_TRUE(bound.ok()) << bound.error();
}

// ---- Scenario files ----

void ExpectLoadError(const std::string& file, const std::string& needle) {
  auto r = LoadScenarioFile(DataPath(file));
  ASSERT_FALSE(r.ok()) << file << " was accepted";
  EXPECT_NE(r.error().find(needle), std::string::npos) << file << ": " << r.error();
}

// KAI v0.17's corpus has claims asking for more devices than a resource.k8s.io claim may (its
// "DRA overflow" cases): a scenario keeps such a count as a number, never one entry per device,
// and a cycle over it stays small and fast.
TEST(ScenarioRanges, AHugeScenarioClaimCountIsKeptAsANumber) {
  auto r = LoadScenarioFile(DataPath("scenario-dra-claim-count-2e8.json"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r.value().cluster.resource_claims.size(), 1u);
  EXPECT_EQ(r.value().cluster.resource_claims[0].count, 200000000);
  EXPECT_TRUE(r.value().cluster.resource_claims[0].device_requests.empty());
  ScenarioOutcome out = RunScenario(r.value(), BuiltinPlugins(), BuiltinActions());
  EXPECT_TRUE(out.passed);
}

// Found by the scenario-loader fuzz target: errors in `dra` and `topologies` did not name the
// file they came from.
TEST(ScenarioRanges, DraAndTopologyErrorsNameTheFile) {
  const std::string path = DataPath("scenario-dra-slice-count-2pow31.json");
  auto r = LoadScenarioFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind(path + ": dra.resource_slices[0]", 0), 0u) << r.error();
  EXPECT_NE(r.error().find("device_count"), std::string::npos) << r.error();
}

// Found by the scenario-loader fuzz target: on this malformed YAML, yaml-cpp's LoadAll produced
// documents without end (minutes of CPU, gigabytes). The loader counts documents up to two.
TEST(ScenarioRanges, MalformedYamlIsRefusedWithoutEndlessDocuments) {
  auto r = LoadScenarioFile(DataPath("scenario-yaml-endless-documents.yaml"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("scenario-yaml-endless-documents.yaml: "), std::string::npos)
      << r.error();
}

TEST(ScenarioRanges, FloatFieldsAreRangeCheckedBeforeConversion) {
  ExpectLoadError("scenario-task-gpus-1e300.json", "field \"gpus\"");
  ExpectLoadError("scenario-node-gpus-2pow32.json", "field \"gpus\"");
  ExpectLoadError("scenario-fraction-devices-2pow31.json", "field \"gpu_fraction_devices\"");
  ExpectLoadError("scenario-gpu-memory-1e19.json", "field \"gpu_memory_mib\"");
  ExpectLoadError("scenario-priority-1e10.json", "field \"priority\"");
  ExpectLoadError("scenario-min-available-wrap.json", "field \"min_available\"");
  ExpectLoadError("scenario-age-1e300.json", "field \"age_minutes\"");
  ExpectLoadError("scenario-queue-offset-1e300.json", "field \"creation_offset_minutes\"");
  ExpectLoadError("scenario-stale-1e300.json", "field \"stale_for_seconds\"");
  ExpectLoadError("scenario-rounds-huge.json", "field \"rounds_until_match\"");
  // A slice of 2^31 devices looped over every device name; a claim of 2e8 devices likewise.
  ExpectLoadError("scenario-dra-slice-2pow31.json", "field \"device_count\"");
}

TEST(ScenarioInput, MalformedDocumentsAreErrorsNotAborts) {
  ExpectLoadError("scenario-number-1e400.json", "malformed JSON");
  ExpectLoadError("scenario-duplicate-key.json", "the key \"name\" appears twice");
  ExpectLoadError("scenario-two-documents.yaml", "more than one YAML document");
  ExpectLoadError("scenario-alias-bomb.yaml", "aliases");
  ExpectLoadError("scenario-pending-pod-missing-node.json", "unknown node \"no-such-node\"");
}

TEST(ScenarioInput, SubGroupTreesAreDepthBounded) {
  // 6,000 levels used to build a 2 GB error path; the bound stops the recursion early.
  std::string tree = "{\"name\":\"leaf\",\"min_available\":1}";
  for (int i = 0; i < 6000; ++i) {
    std::string outer = "{\"name\":\"g";
    outer += std::to_string(i);
    outer += "\",\"children\":[";
    outer += tree;
    outer += "]}";
    tree = std::move(outer);
  }
  const std::string text = R"({"nodes":[{"name":"n1","gpus":1}],"queues":[{"name":"q"}],)"
                           R"("jobs":[{"name":"j","queue":"q","subgroup_tree":)" +
                           tree + R"(,"tasks":[]}],"expect":{"jobs":{}}})";
  auto r = ParseScenario(text, "deep.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("deeper than 32 levels"), std::string::npos);
  EXPECT_LT(r.error().size(), 4096u);
}

TEST(ScenarioInput, InputFilesAreBoundedAndNotDirectories) {
  auto dir = ReadInputFile(std::string(GANTRY_RELIABILITY_DATA_DIR));
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().find("is a directory"), std::string::npos);
  auto zero = ReadInputFile("/dev/zero", 1 << 20);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().find("larger than"), std::string::npos);
}

// ---- Silent acceptance in the conformance runner ----

TEST(ConformanceStrictness, NoExpectFailsAndUnknownTaskExpectationsAreSaid) {
  auto none = LoadScenarioFile(DataPath("scenario-no-expect.json"));
  ASSERT_TRUE(none.ok()) << none.error();
  ScenarioOutcome no_expect = RunScenario(none.value(), BuiltinPlugins(), BuiltinActions());
  EXPECT_FALSE(no_expect.passed);
  EXPECT_FALSE(no_expect.differences.empty());

  // The scenario format leaves an expectation naming a pod that does not exist unchecked (the
  // shared corpus relies on it), the same for every scenario: the outcome carries a note naming
  // it, and the conformance command prints it.
  auto missing = LoadScenarioFile(DataPath("scenario-expect-missing-task.json"));
  ASSERT_TRUE(missing.ok()) << missing.error();
  ScenarioOutcome out = RunScenario(missing.value(), BuiltinPlugins(), BuiltinActions());
  ASSERT_EQ(out.notes.size(), 1u);
  EXPECT_NE(out.notes[0].find("expect.tasks.j-typo: no pod of that name"), std::string::npos)
      << out.notes[0];
  cli::ConformanceOptions options;
  options.paths = {DataPath("scenario-expect-missing-task.json")};
  std::ostringstream cout, cerr;
  cli::RunConformance(options, cout, cerr);
  EXPECT_NE(cerr.str().find("expect.tasks.j-typo"), std::string::npos) << cerr.str();
}

TEST(ConformanceStrictness, AFolderWithoutScenariosAndADirectoryAsConfigAreErrors) {
  const auto empty = std::filesystem::temp_directory_path() / "gantry-reliability-empty";
  std::filesystem::create_directories(empty);
  cli::ConformanceOptions options;
  options.paths = {empty.string()};
  std::ostringstream out, err;
  EXPECT_NE(cli::RunConformance(options, out, err), 0);
  EXPECT_NE(err.str().find("no scenario files"), std::string::npos) << err.str();
  std::filesystem::remove(empty);

  cli::CycleOptions cycle;
  cycle.scenario = DataPath("scenario-expect-missing-task.json");
  cycle.config = GANTRY_RELIABILITY_DATA_DIR;
  std::ostringstream cout, cerr;
  EXPECT_NE(cli::RunCycle(cycle, cout, cerr), 0);
  EXPECT_NE(cerr.str().find("cannot open file (or is a directory)"), std::string::npos)
      << cerr.str();
}

TEST(CliOutput, JsonOutputWithInvalidUtf8NamesDoesNotAbort) {
  // JSON input must be valid UTF-8, but YAML input takes any bytes: a job named "j\xff".
  const auto path = std::filesystem::temp_directory_path() / "gantry-reliability-utf8.yaml";
  std::ofstream(path)
      << "nodes: [{name: n1, gpus: 1}]\n"
         "queues: [{name: q}]\n"
         "jobs: [{name: \"j\xff\", queue: q, tasks: [{name: t\xff, state: pending, gpus: 1}]}]\n"
         "expect: {nodes: {n1: {idle_gpus: 0, releasing_gpus: 0}}}\n";
  cli::CycleOptions cycle;
  cycle.scenario = path.string();
  cycle.json = true;
  std::ostringstream out, err;
  EXPECT_EQ(cli::RunCycle(cycle, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("\xEF\xBF\xBD"), std::string::npos) << out.str();  // U+FFFD for 0xFF
  std::filesystem::remove(path);
}

// ---- kubeconfig ----

TEST(KubeconfigSafety, RefusesUnsafeCombinationsAndUnboundedFiles) {
  auto zero = kube::LoadKubeconfig(DataPath("kubeconfig-ca-dev-zero.yaml"));
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().find("certificate-authority"), std::string::npos) << zero.error();

  // A FIFO as the CA: refused at once instead of blocking on a read no writer will ever end.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gantry-kubeconfig-fifo-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "ca.crt").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string with_fifo =
      "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
      "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
      "clusters: [{name: k, cluster: {server: \"https://127.0.0.1:6443\", "
      "certificate-authority: ca.crt}}]\n"
      "users: [{name: u, user: {token: t}}]\n";
  auto blocked = kube::ParseKubeconfig(with_fifo, "fifo", dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error().find("certificate-authority"), std::string::npos) << blocked.error();
  EXPECT_NE(blocked.error().find("not a regular file"), std::string::npos) << blocked.error();

  auto insecure = kube::LoadKubeconfig(DataPath("kubeconfig-insecure-with-ca.yaml"));
  ASSERT_FALSE(insecure.ok());
  EXPECT_NE(insecure.error().find("insecure-skip-tls-verify"), std::string::npos)
      << insecure.error();

  auto http = kube::LoadKubeconfig(DataPath("kubeconfig-token-over-http.yaml"));
  ASSERT_FALSE(http.ok());
  EXPECT_NE(http.error().find("not sent over plain http://"), std::string::npos) << http.error();
}

}  // namespace
}  // namespace gantry
