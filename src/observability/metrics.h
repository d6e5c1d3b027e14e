// Prometheus metrics: a registry of counter, gauge and histogram families with labels, rendered
// in the Prometheus text exposition format (version 0.0.4) for a /metrics endpoint.
//
// A family is registered once, with its name, help text and label names, and hands out one
// child per combination of label values:
//
//   Registry registry;
//   CounterFamily& binds = registry.AddCounter("binds_total", "Binds by result", {"result"});
//   binds.With({"success"}).Inc();
//   Histogram& latency = registry.AddHistogram("bind_seconds", "Bind latency", {},
//                                              ExponentialBuckets(0.005, 2, 10)).With({});
//   latency.Observe(0.012);
//   std::string text = registry.Expose();
//
// References returned by Add* and With() stay valid as long as the registry lives, so hot paths
// look a child up once and keep it. Every operation is thread-safe; updating a counter or gauge
// is a lock-free atomic operation, observing a histogram takes its own short lock.
//
// Misuse is a programming error and throws std::invalid_argument: a name that is not a valid
// Prometheus metric or label name, a name registered twice, a wrong number of label values,
// bucket bounds that are not strictly increasing, a negative counter increment.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gantry::obs {

// Monotonically increasing value (e.g. requests served).
class Counter {
 public:
  // Adds `v` (>= 0; throws std::invalid_argument otherwise).
  void Inc(double v = 1);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down (e.g. queue depth, last cycle's latency).
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v);
  void Inc() { Add(1); }
  void Dec() { Add(-1); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into buckets with fixed upper bounds (plus an implicit +Inf bucket), with
// their sum and count.
class Histogram {
 public:
  // `upper_bounds` strictly increasing and finite (validated by the registry).
  explicit Histogram(std::vector<double> upper_bounds);

  // Counts `v` in the first bucket whose upper bound is >= v (Prometheus buckets are inclusive).
  void Observe(double v);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative_counts;  // per bound; the count is the +Inf bucket
    uint64_t count = 0;
    double sum = 0;
  };
  // A consistent view (taken under the histogram's lock).
  Snapshot Read() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  double sum_ = 0;
};

// `count` bounds: start, start*factor, start*factor^2, ... (start > 0, factor > 1, count >= 1).
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// `count` bounds: start, start+width, ... (width > 0, count >= 1).
std::vector<double> LinearBuckets(double start, double width, int count);

enum class MetricType { kCounter, kGauge, kHistogram };

// One metric name with its help text and label names; the typed MetricFamily below holds the
// children.
class Family {
 public:
  virtual ~Family() = default;
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Appends this family in exposition format (nothing when it has labels and no child yet).
  virtual void Render(std::string& out) const = 0;

 protected:
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> labels)
      : name_(std::move(name)),
        help_(std::move(help)),
        type_(type),
        label_names_(std::move(labels)) {}
  // "# HELP" and "# TYPE" lines.
  void RenderHeader(std::string& out) const;
  // `{a="x",b="y"}` for these values ("" without labels); `extra` (e.g. le="0.5") goes last.
  std::string LabelText(const std::vector<std::string>& values, std::string_view extra) const;
  // Throws std::invalid_argument unless there is one value per label name.
  void CheckArity(const std::vector<std::string>& values) const;

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
};

// The children of one family, keyed by label values (in label-name order).
template <typename M>
class MetricFamily final : public Family {
 public:
  using Factory = std::function<std::unique_ptr<M>()>;
  MetricFamily(std::string name, std::string help, MetricType type, std::vector<std::string> labels,
               Factory factory)
      : Family(std::move(name), std::move(help), type, std::move(labels)),
        factory_(std::move(factory)) {}

  // The child for these label values, created on first use.
  M& With(const std::vector<std::string>& values) {
    CheckArity(values);
    std::lock_guard<std::mutex> lock(mu_);
    auto& child = children_[values];
    if (!child) child = factory_();
    return *child;
  }

  // Removes every child whose label number `label_index` has value `value` (the series of an
  // object that is gone); returns how many. References to removed children dangle afterwards.
  size_t RemoveMatching(size_t label_index, const std::string& value) {
    std::lock_guard<std::mutex> lock(mu_);
    return std::erase_if(children_, [&](const auto& entry) {
      return label_index < entry.first.size() && entry.first[label_index] == value;
    });
  }

  void Render(std::string& out) const override;

 private:
  Factory factory_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;
};

// Rendering per metric type (metrics.cc); the families are instantiated there.
template <>
void MetricFamily<Counter>::Render(std::string& out) const;
template <>
void MetricFamily<Gauge>::Render(std::string& out) const;
template <>
void MetricFamily<Histogram>::Render(std::string& out) const;
extern template class MetricFamily<Counter>;
extern template class MetricFamily<Gauge>;
extern template class MetricFamily<Histogram>;

using CounterFamily = MetricFamily<Counter>;
using GaugeFamily = MetricFamily<Gauge>;
using HistogramFamily = MetricFamily<Histogram>;

class Registry {
 public:
  // A family with no label names has exactly one child, With({}), and is rendered (as 0) from
  // the start; a labelled family appears once a child exists.
  CounterFamily& AddCounter(std::string name, std::string help,
                            std::vector<std::string> label_names = {});
  GaugeFamily& AddGauge(std::string name, std::string help,
                        std::vector<std::string> label_names = {});
  // "le" may not be a label name of a histogram.
  HistogramFamily& AddHistogram(std::string name, std::string help,
                                std::vector<std::string> label_names,
                                std::vector<double> upper_bounds);

  // Every family in exposition format 0.0.4, families sorted by name and children by label
  // values: "# HELP", "# TYPE", then one line per sample.
  std::string Expose() const;

  // The Content-Type of Expose()'s output.
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  Family& Add(std::unique_ptr<Family> family);
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_;
};

// Exposition helpers (exposed for tests).
// A sample value: shortest round-trip form ("1", "0.25", "1e+06"), "+Inf", "-Inf", "NaN".
std::string FormatValue(double v);
// A label value with backslash, double quote and newline escaped.
std::string EscapeLabelValue(std::string_view v);
// Help text with backslash and newline escaped.
std::string EscapeHelp(std::string_view v);
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

}  // namespace gantry::obs
