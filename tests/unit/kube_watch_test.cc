// Watch streams: event decoding across arbitrary chunk splits, and the list-then-watch loop
// (resume from bookmarks, relist on 410, backoff on other failures, stop from another thread)
// driven through a fake transport on a fake clock.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "kube/fake_transport.h"
#include "kube/informer.h"
#include "kube/json_parse.h"
#include "kube/list_watcher.h"
#include "kube/watch_decoder.h"

namespace gantry::kube {
namespace {

using nlohmann::json;

std::string EventLine(const std::string& type, const std::string& name, const std::string& rv) {
  return json({{"type", type},
               {"object",
                {{"kind", "Pod"}, {"metadata", {{"name", name}, {"resourceVersion", rv}}}}}})
             .dump() +
         "\n";
}

std::string BookmarkLine(const std::string& rv) {
  return json({{"type", "BOOKMARK"},
               {"object", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", rv}}}}}})
             .dump() +
         "\n";
}

std::string ErrorLine(int code, const std::string& reason) {
  return json({{"type", "ERROR"},
               {"object",
                {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"code", code},
                 {"reason", reason},
                 {"message", "too old resource version"}}}})
             .dump() +
         "\n";
}

HttpResponse ListResponse(const std::string& rv, const std::vector<std::string>& names) {
  json items = json::array();
  for (const std::string& n : names) items.push_back({{"metadata", {{"name", n}}}});
  return HttpResponse{
      200, json({{"kind", "PodList"}, {"metadata", {{"resourceVersion", rv}}}, {"items", items}})
               .dump()};
}

TEST(WatchDecoderTest, EventsSurviveEverySplitPoint) {
  std::string stream = EventLine("ADDED", "a", "1") + BookmarkLine("2") +
                       EventLine("MODIFIED", "caf\xc3\xa9", "3") + "\n" +
                       EventLine("DELETED", "a", "4");
  for (size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    size_t cut2 = (cut1 * 7) % (stream.size() + 1);
    size_t lo = std::min(cut1, cut2);
    size_t hi = std::max(cut1, cut2);
    WatchDecoder d;
    std::vector<WatchEvent> out;
    for (std::string_view part :
         {std::string_view(stream).substr(0, lo), std::string_view(stream).substr(lo, hi - lo),
          std::string_view(stream).substr(hi)}) {
      Result<size_t> n = d.Feed(part, out);
      ASSERT_TRUE(n.ok()) << n.error();
    }
    ASSERT_EQ(out.size(), 4u) << "cuts at " << lo << ", " << hi;
    EXPECT_EQ(out[0].type, EventType::kAdded);
    EXPECT_EQ(out[1].type, EventType::kBookmark);
    EXPECT_EQ(out[1].object["metadata"]["resourceVersion"], "2");
    EXPECT_EQ(out[2].type, EventType::kModified);
    EXPECT_EQ(out[2].object["metadata"]["name"], "caf\xc3\xa9");
    EXPECT_EQ(out[3].type, EventType::kDeleted);
    EXPECT_EQ(d.pending(), 0u);
  }
}

TEST(WatchDecoderTest, ByteByByteAndPartialTail) {
  std::string stream = EventLine("ADDED", "a", "1") + EventLine("ADDED", "b", "2");
  WatchDecoder d;
  std::vector<WatchEvent> out;
  for (size_t i = 0; i + 5 < stream.size(); ++i) ASSERT_TRUE(d.Feed(stream.substr(i, 1), out).ok());
  EXPECT_EQ(out.size(), 1u);
  EXPECT_GT(d.pending(), 0u);
  ASSERT_TRUE(d.Feed(stream.substr(stream.size() - 5), out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].object["metadata"]["name"], "b");
}

TEST(WatchDecoderTest, ErrorEventsAndMalformedLines) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  ASSERT_TRUE(d.Feed(ErrorLine(410, "Expired"), out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, EventType::kError);
  EXPECT_EQ(out[0].object["code"], 410);

  struct Case {
    std::string line;
    std::string want;
  };
  for (const Case& c :
       std::vector<Case>{{"{\"type\": \"ADDED\", \"object\": {\n", "invalid JSON"},
                         {"[1,2]\n", "not a JSON object"},
                         {"{\"object\": {}}\n", "\"type\""},
                         {"{\"type\": \"RENAMED\", \"object\": {}}\n", "unknown type \"RENAMED\""},
                         {"{\"type\": \"ADDED\", \"object\": 3}\n", "\"object\""}}) {
    WatchDecoder bad;
    std::vector<WatchEvent> ignored;
    Result<size_t> r = bad.Feed(c.line, ignored);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_NE(r.error().find(c.want), std::string::npos) << r.error();
  }
}

TEST(JsonParseTest, DropsManagedFieldsUnderMetadataOnly) {
  json managed =
      json::array({{{"manager", "kubelet"}, {"fieldsV1", {{"f:status", json::object()}}}}});
  json pod = {
      {"kind", "Pod"},
      {"metadata",
       {{"name", "p"}, {"labels", {{"managedFields", "x"}}}, {"managedFields", managed}}},
      {"spec",
       {{"managedFields", 1},
        {"template", {{"metadata", {{"name", "t"}, {"managedFields", managed}}}}}}},
      {"status", {{"phase", "Running"}, {"n", -3}, {"f", 0.5}, {"b", true}, {"z", nullptr}}}};
  json list = {
      {"kind", "PodList"}, {"metadata", {{"resourceVersion", "7"}}}, {"items", {pod, pod}}};

  json want = pod;
  want["metadata"].erase("managedFields");
  want["spec"]["template"]["metadata"].erase("managedFields");
  json got;
  ASSERT_TRUE(ParseWithoutManagedFields(pod.dump(), got));
  EXPECT_EQ(got, want);
  // Keys named managedFields elsewhere (labels, spec) stay.
  EXPECT_EQ(got["metadata"]["labels"]["managedFields"], "x");
  EXPECT_EQ(got["spec"]["managedFields"], 1);

  ASSERT_TRUE(ParseWithoutManagedFields(list.dump(2), got));
  EXPECT_EQ(got, (json{{"kind", "PodList"},
                       {"metadata", {{"resourceVersion", "7"}}},
                       {"items", {want, want}}}));

  // Scalars as the managedFields value, and documents that are not objects, parse as before.
  ASSERT_TRUE(ParseWithoutManagedFields(R"({"metadata":{"managedFields":null,"a":1}})", got));
  EXPECT_EQ(got, (json{{"metadata", {{"a", 1}}}}));
  ASSERT_TRUE(ParseWithoutManagedFields("[1, \"a\", {}]", got));
  EXPECT_EQ(got, json::parse("[1, \"a\", {}]"));
  ASSERT_TRUE(ParseWithoutManagedFields("  42 ", got));
  EXPECT_EQ(got, 42);
  // A repeated key: the last wins, as with json::parse.
  ASSERT_TRUE(ParseWithoutManagedFields(R"({"a":1,"a":{"b":2}})", got));
  EXPECT_EQ(got, json::parse(R"({"a":1,"a":{"b":2}})"));
}

TEST(JsonParseTest, RejectsInvalidJson) {
  json got;
  for (const char* bad :
       {"", "{", "{\"a\":}", "{\"metadata\":{\"managedFields\":[1,}}", "1 2", "{\"a\":1}}"}) {
    EXPECT_FALSE(ParseWithoutManagedFields(bad, got)) << bad;
  }
}

TEST(WatchDecoderTest, EventObjectsComeWithoutManagedFields) {
  json line = {{"type", "MODIFIED"},
               {"object",
                {{"kind", "Pod"},
                 {"metadata",
                  {{"name", "p"},
                   {"resourceVersion", "9"},
                   {"managedFields", json::array({{{"manager", "m"}}})}}}}}};
  WatchDecoder d;
  std::vector<WatchEvent> out;
  ASSERT_TRUE(d.Feed(line.dump() + "\n", out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].object,
            (json{{"kind", "Pod"}, {"metadata", {{"name", "p"}, {"resourceVersion", "9"}}}}));
}

// Records what a cache would see, and stops the watcher once `stop_after_syncs` syncs happened.
class RecordingHandler : public WatchHandler {
 public:
  void OnSync(std::vector<Object> items, const std::string& rv) override {
    std::string names;
    for (const Object& o : items) names += NameOf(o) + ",";
    log.push_back("SYNC@" + rv + ":" + names);
    if (++syncs == stop_after_syncs && watcher != nullptr) watcher->Stop();
    if (synced) synced->set_value();
    synced = nullptr;
  }
  void OnEvent(EventType type, const Object& object) override {
    log.push_back(std::string(EventTypeName(type)) + ":" + NameOf(object));
    if (stop_on_event == log.back() && watcher != nullptr) watcher->Stop();
  }
  void OnError(const ApiError& error, Clock::Duration retry_in) override {
    log.push_back("ERR:" + std::to_string(error.http_status));
    retries.push_back(retry_in);
  }

  std::vector<std::string> log;
  std::vector<Clock::Duration> retries;
  int syncs = 0;
  int stop_after_syncs = -1;
  std::string stop_on_event;  // a log entry, e.g. "DELETED:d"
  ListWatcher* watcher = nullptr;
  std::promise<void>* synced = nullptr;
};

class ListWatcherTest : public ::testing::Test {
 protected:
  ListWatcherTest()
      : transport_(std::make_shared<FakeTransport>()), clock_(std::make_shared<FakeClock>()) {
    ClientOptions o;
    o.qps = 0;
    o.clock = clock_;
    client_ = std::make_shared<Client>(transport_, o);
  }
  std::unique_ptr<ListWatcher> Make(ListWatchOptions options = {}) {
    auto w = std::make_unique<ListWatcher>(client_, resources::kPods, options, handler_, clock_,
                                           /*seed=*/42);
    handler_.watcher = w.get();
    return w;
  }
  // The resourceVersion= of every watch request, in order.
  std::vector<std::string> WatchVersions() const {
    std::vector<std::string> out;
    for (const HttpRequest& r : transport_->requests()) {
      if (r.path.find("watch=1") == std::string::npos) continue;
      size_t at = r.path.find("resourceVersion=");
      out.push_back(
          at == std::string::npos ? "" : r.path.substr(at + 16, r.path.find('&', at) - at - 16));
    }
    return out;
  }
  int Lists() const {
    int n = 0;
    for (const HttpRequest& r : transport_->requests())
      n += r.path.find("watch=1") == std::string::npos;
    return n;
  }

  std::shared_ptr<FakeTransport> transport_;
  std::shared_ptr<FakeClock> clock_;
  std::shared_ptr<Client> client_;
  RecordingHandler handler_;
};

TEST_F(ListWatcherTest, ErrorEvent410RelistsAndReplacesEverything) {
  transport_->PushResponse(ListResponse("10", {"a", "b"}));
  // First watch: an event split mid-line, a bookmark, then "too old" as an ERROR event.
  std::string w1 = EventLine("ADDED", "c", "11") + BookmarkLine("15") + ErrorLine(410, "Expired");
  transport_->PushStream({200, {w1.substr(0, 20), w1.substr(20, 70), w1.substr(90)}, "", false});
  transport_->PushResponse(ListResponse("20", {"b", "c", "d"}));
  transport_->PushStream({200, {EventLine("DELETED", "d", "21")}, "", true});
  handler_.stop_on_event = "DELETED:d";

  auto w = Make();
  w->Run();  // returns once the handler stops it

  EXPECT_EQ(handler_.log, (std::vector<std::string>{"SYNC@10:a,b,", "ADDED:c", "ERR:410",
                                                    "SYNC@20:b,c,d,", "DELETED:d"}));
  EXPECT_EQ(WatchVersions(), (std::vector<std::string>{"10", "20"}));
  EXPECT_EQ(Lists(), 2);
  EXPECT_EQ(w->lists(), 2);
  EXPECT_EQ(w->resource_version(), "21");
  EXPECT_TRUE(clock_->sleeps().empty());  // a relist is immediate, not backed off
  std::string first_watch = transport_->requests()[1].path;
  EXPECT_NE(first_watch.find("allowWatchBookmarks=true"), std::string::npos) << first_watch;
  EXPECT_NE(first_watch.find("timeoutSeconds="), std::string::npos) << first_watch;
}

TEST_F(ListWatcherTest, Http410OnWatchStartRelists) {
  transport_->PushResponse(ListResponse("10", {"a"}));
  transport_->PushStream(
      {410, {}, json({{"kind", "Status"}, {"code", 410}, {"reason", "Gone"}}).dump(), false});
  transport_->PushResponse(ListResponse("30", {}));
  handler_.stop_after_syncs = 2;
  auto w = Make();
  w->Run();
  EXPECT_EQ(handler_.log, (std::vector<std::string>{"SYNC@10:a,", "ERR:410", "SYNC@30:"}));
  EXPECT_EQ(Lists(), 2);
}

TEST_F(ListWatcherTest, ServerCloseResumesFromTheLastBookmarkWithoutRelisting) {
  transport_->PushResponse(ListResponse("10", {}));
  transport_->PushStream({200, {EventLine("ADDED", "a", "12"), BookmarkLine("17")}, "", false});
  transport_->PushStream({200, {EventLine("MODIFIED", "a", "18")}, "", true});
  handler_.stop_on_event = "MODIFIED:a";
  auto w = Make();
  w->Run();
  EXPECT_EQ(handler_.log, (std::vector<std::string>{"SYNC@10:", "ADDED:a", "MODIFIED:a"}));
  EXPECT_EQ(WatchVersions(), (std::vector<std::string>{"10", "17"}));
  EXPECT_EQ(Lists(), 1);
}

TEST_F(ListWatcherTest, FailuresBackOffExponentiallyWithJitterAndResumeFromTheSameVersion) {
  ListWatchOptions o;
  o.backoff.initial = std::chrono::seconds(1);
  o.backoff.max = std::chrono::seconds(4);
  o.backoff.factor = 2;
  o.backoff.jitter = 0.5;
  // The list fails twice (500, 503), then works; the watch fails three times with 500, then
  // delivers an event.
  transport_->PushResponse(HttpResponse{500, "{}"});
  transport_->PushResponse(HttpResponse{503, "busy"});
  transport_->PushResponse(ListResponse("10", {"a"}));
  for (int i = 0; i < 3; ++i) transport_->PushStream({500, {}, "oops", false});
  transport_->PushStream({200, {EventLine("MODIFIED", "a", "11")}, "", true});
  handler_.stop_on_event = "MODIFIED:a";
  auto w = Make(o);
  w->Run();

  EXPECT_EQ(Lists(), 3);
  EXPECT_EQ(WatchVersions(), (std::vector<std::string>{"10", "10", "10", "10"}));
  // Two list failures, then (backoff reset by the successful list) three watch failures.
  std::vector<Clock::Duration> sleeps = clock_->sleeps();
  ASSERT_EQ(sleeps.size(), 5u);
  auto within = [](Clock::Duration d, int base_seconds) {
    return d >= std::chrono::seconds(base_seconds) &&
           d < std::chrono::milliseconds(base_seconds * 1500);
  };
  EXPECT_TRUE(within(sleeps[0], 1)) << sleeps[0].count();
  EXPECT_TRUE(within(sleeps[1], 2)) << sleeps[1].count();
  EXPECT_TRUE(within(sleeps[2], 1)) << sleeps[2].count();
  EXPECT_TRUE(within(sleeps[3], 2)) << sleeps[3].count();
  EXPECT_TRUE(within(sleeps[4], 4)) << sleeps[4].count();
  EXPECT_EQ(handler_.retries, sleeps);
  EXPECT_EQ(handler_.log.back(), "MODIFIED:a");
}

TEST_F(ListWatcherTest, StopFromAnotherThreadEndsAnIdleWatch) {
  transport_->PushResponse(ListResponse("10", {"a"}));
  // No stream scripted: the watch blocks like an idle one until cancelled.
  std::promise<void> synced;
  handler_.synced = &synced;
  auto w = Make();
  std::thread t([&] { w->Run(); });
  synced.get_future().wait();
  w->Stop();
  t.join();
  EXPECT_EQ(handler_.log, std::vector<std::string>{"SYNC@10:a,"});
  EXPECT_EQ(Lists(), 1);
}

TEST_F(ListWatcherTest, ListWithoutAResourceVersionIsRetried) {
  transport_->PushResponse(HttpResponse{
      200, json({{"metadata", {{"resourceVersion", 12}}}, {"items", json::array()}}).dump()});
  transport_->PushResponse(ListResponse("13", {"a"}));
  handler_.stop_after_syncs = 1;
  auto w = Make();
  w->Run();
  EXPECT_EQ(handler_.log, (std::vector<std::string>{"ERR:200", "SYNC@13:a,"}));
  EXPECT_EQ(clock_->sleeps().size(), 1u);
}

TEST_F(ListWatcherTest, MalformedEventRewatchesAfterBackoff) {
  transport_->PushResponse(ListResponse("10", {}));
  transport_->PushStream({200, {EventLine("ADDED", "a", "11"), "{garbage\n"}, "", false});
  transport_->PushStream({200, {EventLine("ADDED", "b", "12")}, "", true});
  handler_.stop_on_event = "ADDED:b";
  auto w = Make();
  w->Run();
  EXPECT_EQ(handler_.log, (std::vector<std::string>{"SYNC@10:", "ADDED:a", "ERR:200", "ADDED:b"}));
  EXPECT_EQ(WatchVersions(), (std::vector<std::string>{"10", "11"}));
}

// A handler that takes ownership of each event's object: the watcher hands it over through
// OnOwnedEvent, and the const& OnEvent is not called as well.
class OwningHandler : public WatchHandler {
 public:
  void OnSync(std::vector<Object> /*items*/, const std::string& /*rv*/) override {}
  void OnEvent(EventType /*type*/, const Object& /*object*/) override { ++const_calls; }
  void OnOwnedEvent(EventType type, Object&& object) override {
    kept.emplace_back(type, std::move(object));
    if (kept.size() == 2 && watcher != nullptr) watcher->Stop();
  }
  std::vector<std::pair<EventType, Object>> kept;
  int const_calls = 0;
  ListWatcher* watcher = nullptr;
};

TEST_F(ListWatcherTest, OwnedEventsHandOverTheObjectAndSkipBookmarks) {
  transport_->PushResponse(ListResponse("10", {}));
  transport_->PushStream(
      {200,
       {EventLine("ADDED", "a", "11") + BookmarkLine("12"), EventLine("MODIFIED", "a", "13")},
       "",
       true});
  OwningHandler owner;
  ListWatcher w(client_, resources::kPods, {}, owner, clock_, /*seed=*/42);
  owner.watcher = &w;
  w.Run();
  ASSERT_EQ(owner.kept.size(), 2u);
  EXPECT_EQ(owner.kept[0].first, EventType::kAdded);
  EXPECT_EQ(ResourceVersionOf(owner.kept[0].second), "11");
  EXPECT_EQ(owner.kept[1].first, EventType::kModified);
  EXPECT_EQ(NameOf(owner.kept[1].second), "a");
  EXPECT_EQ(owner.const_calls, 0);
  EXPECT_EQ(w.resource_version(), "13");
}

// The default OnOwnedEvent forwards to OnEvent, so handlers written against OnEvent alone keep
// working (RecordingHandler above is one; this calls it directly).
TEST(WatchHandlerTest, DefaultOwnedEventForwardsToOnEvent) {
  RecordingHandler h;
  WatchHandler& base = h;
  base.OnOwnedEvent(EventType::kDeleted, Object{{"metadata", {{"name", "x"}}}});
  EXPECT_EQ(h.log, (std::vector<std::string>{"DELETED:x"}));
}

// A Store keeps an owned event's object as delivered (no transform) and its listeners see it.
TEST(StoreOwnedEventTest, StoresAndAnnouncesTheHandedOverObject) {
  Store store;
  std::vector<std::string> heard;
  store.AddListener([&](EventType type, const Object& o) {
    heard.push_back(std::string(EventTypeName(type)) + ":" + NameOf(o) + "@" +
                    ResourceVersionOf(o));
  });
  auto pod = [](const std::string& rv) {
    return Object{{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"resourceVersion", rv}}}};
  };
  store.OnSync({}, "1");
  store.OnOwnedEvent(EventType::kAdded, pod("2"));
  ASSERT_NE(store.Get("ns", "p"), nullptr);
  EXPECT_EQ(*store.Get("ns", "p"), pod("2"));
  store.OnOwnedEvent(EventType::kModified, pod("3"));
  EXPECT_EQ(ResourceVersionOf(*store.Get("ns", "p")), "3");
  store.OnOwnedEvent(EventType::kDeleted, pod("4"));
  EXPECT_EQ(store.Get("ns", "p"), nullptr);
  store.OnOwnedEvent(EventType::kBookmark, pod("5"));
  EXPECT_EQ(store.size(), 0u);
  // A delete announces the last stored state.
  EXPECT_EQ(heard, (std::vector<std::string>{"ADDED:p@2", "MODIFIED:p@3", "DELETED:p@3"}));
}

// With a transform the Store stores the transformed object, from an owned event too.
TEST(StoreOwnedEventTest, TransformStillApplies) {
  StoreOptions options;
  options.transform = [](const Object& o) {
    Object t = o;
    t.erase("spec");
    return t;
  };
  Store store(options);
  store.OnOwnedEvent(EventType::kAdded,
                     Object{{"metadata", {{"name", "p"}}}, {"spec", {{"big", "x"}}}});
  ASSERT_NE(store.Get("", "p"), nullptr);
  EXPECT_FALSE(store.Get("", "p")->contains("spec"));
}

}  // namespace
}  // namespace gantry::kube
