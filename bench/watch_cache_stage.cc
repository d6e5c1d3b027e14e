#include "watch_cache_stage.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cache/watch_cache.h"
#include "framework/session.h"
#include "kube/json_parse.h"
#include "kube_objects.h"
#include "measure.h"
#include "util/allocator.h"

namespace gantry::bench {

bool MeasureWatchCache(const gantry::Scenario& sc, gantry::Scheduler& scheduler, int64_t now,
                       int nodes, bool whole, std::string& json_fields) {
  namespace cache = gantry::cache;
  gantry::ReleaseFreeMemory();
  const int64_t heap_before = gantry::AllocatedBytes();
  const double rss_before = CurrentRssMib();
  {
    const cache::NodePool pool;
    cache::WatchCache wc("kai-scheduler", pool,
                         whole ? cache::Hold::kWhole : cache::Hold::kReadFields);
    for (int k = 0; k < cache::kNumKinds; ++k) wc.Replace(static_cast<cache::Kind>(k), {});
    struct PerKind {
      int64_t objects = 0;
      int64_t json_bytes = 0;
      double parse_ms = 0;
      double apply_ms = 0;
      int64_t heap = 0;  // heap growth while this kind was fed
      // Every 16th object: the heap of the parsed object alone (what Hold::kWhole keeps).
      int64_t sampled = 0;
      int64_t sampled_json_heap = 0;
      // The heap of the part Hold::kReadFields keeps (cache::HeldFields as JSON text): what the
      // scheduling loop reads back from the objects held (events, patches of conditions,
      // creation times, node-pool labels).
      int64_t sampled_held_heap = 0;
    };
    std::vector<PerKind> kinds(cache::kNumKinds);
    int current = -1;
    int64_t heap_mark = heap_before;
    auto close_kind = [&] {
      if (current < 0) return;
      const int64_t h = gantry::AllocatedBytes();
      kinds[static_cast<size_t>(current)].heap = h - heap_mark;
      heap_mark = h;
    };
    bool parse_failed = false;
    std::string text;
    nlohmann::json parsed;
    const double feed_cpu = ThreadCpuMs();
    gantry::bench::ClusterKubeObjects(
        sc.cluster, "kai-scheduler", [&](cache::Kind kind, nlohmann::json&& object) {
          if (static_cast<int>(kind) != current) {
            close_kind();
            current = static_cast<int>(kind);
          }
          PerKind& pk = kinds[static_cast<size_t>(current)];
          text = object.dump();
          object = nlohmann::json();
          const bool sample = pk.objects % 16 == 0;
          const int64_t heap_parse = sample ? gantry::AllocatedBytes() : 0;
          const auto t0 = Clock::now();
          if (!gantry::kube::ParseFiltered(text, cache::FieldsOf(kind).get(), parsed)) {
            parse_failed = true;
          }
          const auto t1 = Clock::now();
          if (sample) {
            ++pk.sampled;
            const int64_t heap_parsed = gantry::AllocatedBytes();
            pk.sampled_json_heap += heap_parsed - heap_parse;
            {
              std::string held_text = cache::HeldFields(kind, parsed, pool.label_key).dump();
              held_text.shrink_to_fit();
              const nlohmann::json held_value(std::move(held_text));  // as the cache keeps it
              pk.sampled_held_heap += gantry::AllocatedBytes() - heap_parsed;
            }
          }
          wc.Apply(kind, gantry::kube::EventType::kAdded, std::move(parsed));
          const auto t2 = Clock::now();
          parsed = nlohmann::json();
          ++pk.objects;
          pk.json_bytes += static_cast<int64_t>(text.size());
          pk.parse_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
          pk.apply_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
        });
    const double feed_cpu_ms = ThreadCpuMs() - feed_cpu;
    text = std::string();
    close_kind();
    if (parse_failed) {
      std::fprintf(stderr, "gantry-bench: an object did not parse back\n");
      return false;
    }
    gantry::ReleaseFreeMemory();
    const int64_t heap_fed = gantry::AllocatedBytes();
    const double rss_fed = CurrentRssMib();

    const auto take_start = Clock::now();
    const double take_cpu = ThreadCpuMs();
    cache::Snapshot snap = wc.Take();
    const double take_cpu_ms = ThreadCpuMs() - take_cpu;
    const double take_ms = MsSince(take_start);
    gantry::ReleaseFreeMemory();
    const int64_t heap_taken = gantry::AllocatedBytes();
    const double rss_taken = CurrentRssMib();

    const gantry::Cluster& cl = *snap.cluster;
    const auto open_start = Clock::now();
    const double open_cpu = ThreadCpuMs();
    auto ssn = scheduler.OpenSession(cl, now);
    const double open_cpu_ms = ThreadCpuMs() - open_cpu;
    const double open_ms = MsSince(open_start);
    const int64_t heap_session = gantry::AllocatedBytes();
    const double rss_session = CurrentRssMib();
    scheduler.CloseSession(*ssn);
    ssn.reset();

    const PerKind& kn = kinds[static_cast<int>(cache::Kind::kNode)];
    const PerKind& kp = kinds[static_cast<int>(cache::Kind::kPod)];
    const PerKind& kg = kinds[static_cast<int>(cache::Kind::kPodGroup)];
    double parse_ms = 0;
    double apply_ms = 0;
    int64_t objects = 0;
    for (const PerKind& k : kinds) {
      parse_ms += k.parse_ms;
      apply_ms += k.apply_ms;
      objects += k.objects;
    }
    auto per = [](int64_t bytes, int64_t n) {
      return n == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(n);
    };
    std::printf(
        "# nodes=%d watch cache: fed %lld objects (%lld nodes, %lld pod groups, %lld pods) | "
        "parse %.0f ms, convert+store %.0f ms (pods %.0f + %.0f ms; thread CPU %.0f ms with "
        "building and "
        "serializing the objects) | heap held %.1f MiB: "
        "%.0f B/node, %.0f B/pod group, %.0f B/pod (JSON text %.0f B/node, %.0f B/pod) | RSS "
        "%.1f -> %.1f MiB\n",
        nodes, static_cast<long long>(objects), static_cast<long long>(kn.objects),
        static_cast<long long>(kg.objects), static_cast<long long>(kp.objects), parse_ms, apply_ms,
        kp.parse_ms, kp.apply_ms, feed_cpu_ms, Mib(heap_fed - heap_before),
        per(kn.heap, kn.objects), per(kg.heap, kg.objects), per(kp.heap, kp.objects),
        per(kn.json_bytes, kn.objects), per(kp.json_bytes, kp.objects), rss_before, rss_fed);
    auto held = [&](const PerKind& k) {
      return per(whole ? k.sampled_json_heap : k.sampled_held_heap, k.sampled);
    };
    std::printf(
        "# nodes=%d watch cache (holding %s): of that, the objects held (sampled): %.0f B/node, "
        "%.0f B/pod group, %.0f B/pod (whole as parsed: %.0f, %.0f, %.0f; the fields read "
        "back: %.0f, %.0f, %.0f); the rest (converted records, store) %.0f B/node, %.0f B/pod "
        "group, %.0f B/pod\n",
        nodes, whole ? "whole objects" : "the fields read back", held(kn), held(kg), held(kp),
        per(kn.sampled_json_heap, kn.sampled), per(kg.sampled_json_heap, kg.sampled),
        per(kp.sampled_json_heap, kp.sampled), per(kn.sampled_held_heap, kn.sampled),
        per(kg.sampled_held_heap, kg.sampled), per(kp.sampled_held_heap, kp.sampled),
        per(kn.heap, kn.objects) - held(kn), per(kg.heap, kg.objects) - held(kg),
        per(kp.heap, kp.objects) - held(kp));
    std::printf(
        "# nodes=%d watch cache: take (full assembly) %.0f ms (thread CPU %.0f ms), model heap "
        "%.1f MiB (%.0f B/pod) | cache + model heap %.1f MiB, RSS %.1f MiB | session build %.0f "
        "ms (thread CPU %.0f ms), session heap %.1f MiB, RSS %.1f MiB | model: %zu nodes, %zu "
        "jobs, %zu pods, %zu queues (scenario: %zu, %zu, %zu, %zu), %zu object errors\n",
        nodes, take_ms, take_cpu_ms, Mib(heap_taken - heap_fed),
        per(heap_taken - heap_fed, static_cast<int64_t>(cl.pods.size())),
        Mib(heap_taken - heap_before), rss_taken, open_ms, open_cpu_ms,
        Mib(heap_session - heap_taken), rss_session, cl.nodes.size(), cl.jobs.size(),
        cl.pods.size(), cl.queues.size(), sc.cluster.nodes.size(), sc.cluster.jobs.size(),
        sc.cluster.pods.size(), sc.cluster.queues.size(), snap.errors.size());
    for (size_t e = 0; e < snap.errors.size() && e < 3; ++e) {
      std::printf("#   %s\n", snap.errors[e].ToString().c_str());
    }
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  ",\"wc_parse_ms\":%.1f,\"wc_apply_ms\":%.1f,\"wc_heap_mib\":%.1f,"
                  "\"wc_node_bytes\":%.0f,\"wc_pod_bytes\":%.0f,\"wc_podgroup_bytes\":%.0f,"
                  "\"wc_take_ms\":%.1f,\"wc_model_heap_mib\":%.1f,\"wc_session_ms\":%.1f,"
                  "\"wc_session_heap_mib\":%.1f,\"wc_rss_mib\":%.1f",
                  parse_ms, apply_ms, Mib(heap_fed - heap_before), per(kn.heap, kn.objects),
                  per(kp.heap, kp.objects), per(kg.heap, kg.objects), take_ms,
                  Mib(heap_taken - heap_fed), open_ms, Mib(heap_session - heap_taken), rss_taken);
    json_fields = buf;
  }
  return true;
}

}  // namespace gantry::bench
