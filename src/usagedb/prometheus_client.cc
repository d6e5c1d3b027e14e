#include "usagedb/prometheus_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <tuple>

#include "util/duration.h"
#include "util/json_fields.h"

namespace gantry::usagedb {

namespace {

std::string Extra(const UsageParams& p, const char* key, const std::string& fallback) {
  auto it = p.extra_params.find(key);
  return it == p.extra_params.end() ? fallback : it->second;
}

// A range for PromQL: whole milliseconds ("90s", "1500ms").
std::string PromDuration(double seconds) {
  const auto ms = std::max<int64_t>(1, static_cast<int64_t>(std::llround(seconds * 1000)));
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

const char* const kResourceNames[3] = {"nvidia.com/gpu", "cpu", "memory"};

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

Result<std::string> CurlGet(const std::string& url, double timeout_s) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Error{"curl_easy_init failed"};
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) return Error{std::string("GET ") + url + ": " + curl_easy_strerror(rc)};
  if (status < 200 || status >= 300) {
    return Error{"GET " + url + ": HTTP " + std::to_string(status) + ": " + body.substr(0, 300)};
  }
  return body;
}

PrometheusClient::PrometheusClient(std::string address, UsageParams params, HttpGet get)
    : address_(std::move(address)), params_(std::move(params)), get_(std::move(get)) {}

Result<std::unique_ptr<PrometheusClient>> PrometheusClient::Create(const std::string& address,
                                                                   const UsageParams& params,
                                                                   HttpGet get) {
  if (address.empty()) return Error{"usageDBConfig.connectionString: empty Prometheus address"};
  std::unique_ptr<PrometheusClient> c(
      new PrometheusClient(address, params, get ? std::move(get) : HttpGet(&CurlGet)));
  while (!c->address_.empty() && c->address_.back() == '/') c->address_.pop_back();
  for (auto [key, target, fallback] : {std::tuple{"usageQueryTimeout", &c->query_timeout_s_, 10.0},
                                       std::tuple{"queryResolution", &c->resolution_s_, 60.0}}) {
    auto it = params.extra_params.find(key);
    *target = fallback;
    if (it == params.extra_params.end()) continue;
    auto s = ParseGoDurationSeconds(it->second);
    if (!s.ok() || s.value() <= 0) {
      return Error{std::string("usageDBConfig.usageParams.extraParams.") + key +
                   ": not a positive duration (got \"" + it->second + "\")"};
    }
    *target = s.value();
  }
  c->allocation_metric_ = {
      Extra(params, "gpuAllocationMetric", "kai_queue_allocated_gpus"),
      Extra(params, "cpuAllocationMetric", "kai_queue_allocated_cpu_cores"),
      Extra(params, "memoryAllocationMetric", "kai_queue_allocated_memory_bytes")};
  c->capacity_metric_ = {
      Extra(params, "gpuCapacityMetric",
            "sum(kube_node_status_capacity{resource=\"nvidia_com_gpu\"})"),
      Extra(params, "cpuCapacityMetric", "sum(kube_node_status_capacity{resource=\"cpu\"})"),
      Extra(params, "memoryCapacityMetric", "sum(kube_node_status_capacity{resource=\"memory\"})")};
  if (params.window_type == UsageParams::WindowType::kCron) {
    auto cron = CronSchedule::Parse(params.cron_string);
    if (!cron.ok()) return Error{"usageDBConfig.usageParams.cronString: " + cron.error()};
    c->cron_ = cron.value();
  }
  return c;
}

std::string PrometheusClient::WindowQuery(const std::string& metric, int64_t now_ms) const {
  std::string decayed = metric;
  if (params_.half_life_seconds) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "0.5^((%lld - time()) / %f)",
                  static_cast<long long>(now_ms / 1000), *params_.half_life_seconds);
    decayed = "((" + metric + ") * (" + buf + "))";
  }
  const int64_t start = WindowStartMs(now_ms, params_, cron_ ? &*cron_ : nullptr);
  const double range_s = static_cast<double>(now_ms - start) / 1000.0;
  return "sum_over_time((" + decayed + ")[" + PromDuration(range_s) + ":" +
         PromDuration(resolution_s_) + "])";
}

std::string PrometheusClient::CapacityQuery(int resource, int64_t now_ms) const {
  return WindowQuery(capacity_metric_[static_cast<size_t>(resource)], now_ms);
}

std::string PrometheusClient::AllocationQuery(int resource, int64_t now_ms) const {
  return WindowQuery(allocation_metric_[static_cast<size_t>(resource)], now_ms);
}

Result<std::vector<std::pair<std::string, double>>> PrometheusClient::Query(
    const std::string& promql, int64_t now_ms) const {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Error{"curl_easy_init failed"};
  char* escaped = curl_easy_escape(curl, promql.c_str(), static_cast<int>(promql.size()));
  std::string url = address_ + "/api/v1/query?query=" + escaped +
                    "&time=" + std::to_string(now_ms / 1000) + "." +
                    std::to_string(now_ms % 1000 + 1000).substr(1);
  curl_free(escaped);
  curl_easy_cleanup(curl);
  auto body = get_(url, query_timeout_s_);
  if (!body.ok()) return Error{body.error() + ", full query: " + promql};
  nlohmann::json doc = nlohmann::json::parse(body.value(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Error{"query " + promql + ": the answer is not JSON"};
  }
  if (StringOr(doc, "status") != "success") {
    return Error{"query " + promql + ": " + StringOr(doc, "errorType", "error") + ": " +
                 StringOr(doc, "error")};
  }
  const auto& data = doc["data"];
  if (!data.is_object() || StringOr(data, "resultType") != "vector") {
    return Error{"unexpected query result: got " + StringOr(data, "resultType", "none") +
                 ", expected vector"};
  }
  if (!data.contains("result") || !data["result"].is_array()) {
    return Error{"query " + promql + ": the answer has no result list"};
  }
  std::vector<std::pair<std::string, double>> out;
  for (const auto& sample : data["result"]) {
    if (!sample.is_object() || !sample.contains("value")) {
      return Error{"query " + promql + ": a sample without a value"};
    }
    std::string queue;
    if (sample.contains("metric") && sample["metric"].is_object() &&
        sample["metric"].contains("queue_name") && sample["metric"]["queue_name"].is_string()) {
      queue = sample["metric"]["queue_name"].get<std::string>();
    }
    const auto& value = sample["value"];
    if (!value.is_array() || value.size() != 2 || !value[1].is_string()) {
      return Error{"query " + promql + ": a sample without a [time, \"value\"] pair"};
    }
    const std::string text = value[1].get<std::string>();
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str()) {
      std::string message = "query ";
      message += promql;
      message += ": value \"";
      message += text;
      message += "\"";
      return Error{message};
    }
    out.emplace_back(std::move(queue), v);
  }
  return out;
}

Result<UsageByQueue> PrometheusClient::GetResourceUsage(int64_t now_ms) {
  double capacity[3] = {0, 0, 0};
  for (int r = 0; r < 3; ++r) {
    const std::string q = CapacityQuery(r, now_ms);
    auto samples = Query(q, now_ms);
    if (!samples.ok()) {
      return Error{std::string("error querying ") + kResourceNames[r] +
                   " capacity: " + samples.error()};
    }
    if (samples.value().empty()) {
      return Error{std::string("error querying ") + kResourceNames[r] +
                   " capacity: no data returned for cluster capacity metric " + q};
    }
    capacity[r] = samples.value().front().second;
    if (!(capacity[r] > 0)) {
      return Error{std::string("error querying ") + kResourceNames[r] + " capacity: " + q +
                   " is not positive"};
    }
  }
  UsageByQueue usage;
  for (int r = 0; r < 3; ++r) {
    auto samples = Query(AllocationQuery(r, now_ms), now_ms);
    if (!samples.ok()) {
      return Error{std::string("error querying ") + kResourceNames[r] +
                   " usage: " + samples.error()};
    }
    for (const auto& [queue, value] : samples.value()) {
      if (queue.empty()) continue;
      QueueUsage& u = usage[queue];
      const double normalised = value / capacity[r];
      (r == 0 ? u.gpu : r == 1 ? u.cpu : u.memory) = normalised;
    }
  }
  return usage;
}

}  // namespace gantry::usagedb
