// The live scheduler's background writer of PodGroup annotation patches.
#include "live/annotation_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kube/fake_transport.h"

namespace gantry::live {
namespace {

using nlohmann::json;

TEST(AnnotationWriterTest, SendsTheNewestPatchPerPodGroupAndHandsBackWhatTheServerReturns) {
  auto transport = std::make_shared<kube::FakeTransport>();
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  transport->SetHandler([&](const kube::HttpRequest& r) {
    {
      // The first patch waits until the test has queued the rest.
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return release; });
    }
    json pg = {{"metadata", {{"name", r.path.substr(r.path.rfind('/') + 1)}}}};
    pg["metadata"]["annotations"] = json::parse(r.body)["metadata"]["annotations"];
    return kube::HttpResponse{200, pg.dump()};
  });
  auto client = std::make_shared<kube::Client>(transport, kube::ClientOptions{.qps = 0});
  std::vector<json> written;
  AnnotationWriter writer(
      client,
      [&](const json& pg) {
        std::lock_guard<std::mutex> lock(mu);
        written.push_back(pg);
      },
      nullptr);
  auto stamp = [](const std::string& t) {
    return json{{"metadata", {{"annotations", {{"kai.scheduler/last-start-timestamp", t}}}}}};
  };
  writer.Start();
  writer.Offer("ns", "a", stamp("2026-11-30T10:00:00Z"));
  // Wait until the worker is inside the first request, then queue two for b (the newer wins).
  for (int i = 0; i < 2000 && transport->requests().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(transport->requests().size(), 1u);
  writer.Offer("ns", "b", stamp("2026-11-30T10:00:01Z"));
  writer.Offer("ns", "b", stamp("2026-11-30T10:00:02Z"));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  for (int i = 0; i < 2000 && writer.written() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  writer.Stop();
  ASSERT_EQ(writer.written(), 2u);
  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "PATCH");
  EXPECT_EQ(requests[1].path,
            "/apis/scheduling.run.ai/v2alpha2/namespaces/ns/podgroups/b");  // the object
  EXPECT_EQ(json::parse(requests[1].body), stamp("2026-11-30T10:00:02Z"));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[1]["metadata"]["annotations"]["kai.scheduler/last-start-timestamp"],
            "2026-11-30T10:00:02Z");
}

TEST(AnnotationWriterTest, WorkersSendAtOnceButOnePodGroupInOrderAndDuplicatesOnce) {
  auto transport = std::make_shared<kube::FakeTransport>();
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  int in_flight_a = 0;
  int most_in_flight_a = 0;
  transport->SetHandler([&](const kube::HttpRequest& r) {
    const std::string name = r.path.substr(r.path.rfind('/') + 1);
    if (name == "a") {
      std::unique_lock<std::mutex> lock(mu);
      most_in_flight_a = std::max(most_in_flight_a, ++in_flight_a);
      cv.wait(lock, [&] { return release; });  // a's patches wait for the test
      --in_flight_a;
    }
    return kube::HttpResponse{200, json{{"metadata", {{"name", name}}}}.dump()};
  });
  auto client = std::make_shared<kube::Client>(transport, kube::ClientOptions{.qps = 0});
  AnnotationWriter writer(client, nullptr, nullptr, /*workers=*/4);
  auto stamp = [](const std::string& t) {
    return json{{"metadata", {{"annotations", {{"kai.scheduler/last-start-timestamp", t}}}}}};
  };
  auto wait_for = [&](auto done) {
    for (int i = 0; i < 5000 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  writer.Start();
  writer.Offer("ns", "a", stamp("2026-11-30T10:00:01Z"));
  wait_for([&] { return transport->requests().size() == 1; });
  writer.Offer("ns", "a", stamp("2026-11-30T10:00:01Z"));  // in flight: nothing new
  writer.Offer("ns", "a", stamp("2026-11-30T10:00:02Z"));  // waits for the first
  writer.Offer("ns", "a", stamp("2026-11-30T10:00:02Z"));  // queued: nothing new
  writer.Offer("ns", "b", stamp("2026-11-30T10:00:03Z"));  // another worker sends it now
  wait_for([&] { return writer.written() == 1; });
  EXPECT_EQ(writer.written(), 1u) << "b was sent while a's first patch was in flight";
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  wait_for([&] { return writer.written() == 3; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // room for a wrong extra send
  writer.Stop();
  EXPECT_EQ(writer.written(), 3u);
  std::vector<json> to_a;
  for (const kube::HttpRequest& r : transport->requests()) {
    if (r.path.ends_with("/a")) to_a.push_back(json::parse(r.body));
  }
  ASSERT_EQ(to_a.size(), 2u);
  EXPECT_EQ(to_a[0], stamp("2026-11-30T10:00:01Z"));
  EXPECT_EQ(to_a[1], stamp("2026-11-30T10:00:02Z"));
  EXPECT_EQ(transport->requests().size(), 3u);
  EXPECT_EQ(most_in_flight_a, 1);
}

TEST(AnnotationWriterTest, APatchJustWrittenIsNotSentAgainUntilItSettles) {
  auto transport = std::make_shared<kube::FakeTransport>();
  // Without on_written the answer is not parsed: a body that is no JSON does not matter.
  transport->SetHandler([](const kube::HttpRequest&) { return kube::HttpResponse{200, "{oops"}; });
  auto client = std::make_shared<kube::Client>(transport, kube::ClientOptions{.qps = 0});
  auto stamp = [](const std::string& t) {
    return json{{"metadata", {{"annotations", {{"kai.scheduler/last-start-timestamp", t}}}}}};
  };
  auto run = [&](std::chrono::milliseconds settle, const std::vector<std::string>& stamps) {
    AnnotationWriter writer(client, nullptr, nullptr, /*workers=*/2, settle);
    writer.Start();
    size_t expected = 0;
    for (const std::string& t : stamps) {
      writer.Offer("ns", "a", stamp(t));
      // Each offer is either written or dropped: wait until the writer is idle again.
      for (int i = 0; i < 2000; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (writer.written() > expected) break;
      }
      expected = writer.written();
    }
    writer.Stop();
    return writer.written();
  };
  const size_t before = transport->requests().size();
  // The repeat of 10:00:01 right after it was written is dropped; 10:00:02 and the return to
  // 10:00:01 are new.
  EXPECT_EQ(run(std::chrono::minutes(10), {"2026-11-30T10:00:01Z", "2026-11-30T10:00:01Z",
                                           "2026-11-30T10:00:02Z", "2026-11-30T10:00:01Z"}),
            3u);
  EXPECT_EQ(transport->requests().size() - before, 3u);
  // With no settling time every offer is sent.
  EXPECT_EQ(run(std::chrono::milliseconds(0), {"2026-11-30T10:00:01Z", "2026-11-30T10:00:01Z"}),
            2u);
}

TEST(AnnotationWriterTest, StopDropsWhatIsStillQueued) {
  auto transport = std::make_shared<kube::FakeTransport>();
  auto client = std::make_shared<kube::Client>(transport, kube::ClientOptions{.qps = 0});
  AnnotationWriter writer(client, nullptr, nullptr);  // never started
  writer.Offer("ns", "a", json::object());
  writer.Offer("ns", "b", json::object());
  writer.Stop();
  EXPECT_EQ(writer.dropped(), 2u);
  EXPECT_EQ(writer.written(), 0u);
  EXPECT_TRUE(transport->requests().empty());
}

}  // namespace
}  // namespace gantry::live
