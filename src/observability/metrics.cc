#include "observability/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace gantry::obs {

namespace {

void AtomicAdd(std::atomic<double>& a, double v) {
  double old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, old + v, std::memory_order_relaxed)) {
  }
}

bool IsNameChar(char c, bool first, bool allow_colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (allow_colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

void CheckBounds(const std::vector<double>& bounds) {
  if (bounds.empty()) throw std::invalid_argument("histogram: no bucket bounds");
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      throw std::invalid_argument("histogram: bucket bounds must be finite (+Inf is implicit)");
    }
    if (i > 0 && bounds[i] <= bounds[i - 1]) {
      throw std::invalid_argument("histogram: bucket bounds must be strictly increasing");
    }
  }
}

}  // namespace

void Counter::Inc(double v) {
  if (!(v >= 0)) throw std::invalid_argument("counter: negative or NaN increment");
  AtomicAdd(value_, v);
}

void Gauge::Add(double v) { AtomicAdd(value_, v); }

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  // First bound >= v; NaN lands in +Inf (as in the Go client).
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  if (std::isnan(v)) i = bounds_.size();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += v;
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t total = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    total += counts_[i];
    s.cumulative_counts.push_back(total);
  }
  s.count = total + counts_.back();
  s.sum = sum_;
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) {
    throw std::invalid_argument("ExponentialBuckets: need start > 0, factor > 1, count >= 1");
  }
  std::vector<double> out;
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) out.push_back(b);
  return out;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  if (!(width > 0) || count < 1) {
    throw std::invalid_argument("LinearBuckets: need width > 0, count >= 1");
  }
  std::vector<double> out;
  for (int i = 0; i < count; ++i) out.push_back(start + width * i);
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, true)) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, false)) return false;
  }
  return true;
}

void Family::RenderHeader(std::string& out) const {
  static constexpr const char* kTypes[] = {"counter", "gauge", "histogram"};
  out += "# HELP ";
  out += name_;
  out += ' ';
  out += EscapeHelp(help_);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += kTypes[static_cast<int>(type_)];
  out += '\n';
}

std::string Family::LabelText(const std::vector<std::string>& values,
                              std::string_view extra) const {
  if (values.empty() && extra.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += label_names_[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  if (!extra.empty()) {
    if (!values.empty()) out += ',';
    out += extra;
  }
  out += '}';
  return out;
}

void Family::CheckArity(const std::vector<std::string>& values) const {
  if (values.size() != label_names_.size()) {
    throw std::invalid_argument("metric " + name_ + ": " + std::to_string(values.size()) +
                                " label values for " + std::to_string(label_names_.size()) +
                                " labels");
  }
}

namespace {

void Sample(std::string& out, std::string_view name, const std::string& labels, double value) {
  out += name;
  out += labels;
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

}  // namespace

template <>
void MetricFamily<Counter>::Render(std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (children_.empty()) return;
  RenderHeader(out);
  for (const auto& [values, c] : children_) Sample(out, name(), LabelText(values, ""), c->Value());
}

template <>
void MetricFamily<Gauge>::Render(std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (children_.empty()) return;
  RenderHeader(out);
  for (const auto& [values, g] : children_) Sample(out, name(), LabelText(values, ""), g->Value());
}

template <>
void MetricFamily<Histogram>::Render(std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (children_.empty()) return;
  RenderHeader(out);
  const std::string bucket = name() + "_bucket";
  for (const auto& [values, h] : children_) {
    Histogram::Snapshot s = h->Read();
    for (size_t i = 0; i < s.upper_bounds.size(); ++i) {
      Sample(out, bucket, LabelText(values, "le=\"" + FormatValue(s.upper_bounds[i]) + "\""),
             static_cast<double>(s.cumulative_counts[i]));
    }
    Sample(out, bucket, LabelText(values, "le=\"+Inf\""), static_cast<double>(s.count));
    const std::string labels = LabelText(values, "");
    Sample(out, name() + "_sum", labels, s.sum);
    Sample(out, name() + "_count", labels, static_cast<double>(s.count));
  }
}

template class MetricFamily<Counter>;
template class MetricFamily<Gauge>;
template class MetricFamily<Histogram>;

namespace {

void CheckNames(const std::string& name, const std::vector<std::string>& labels) {
  if (!IsValidMetricName(name)) throw std::invalid_argument("invalid metric name: " + name);
  for (size_t i = 0; i < labels.size(); ++i) {
    if (!IsValidLabelName(labels[i])) {
      throw std::invalid_argument("metric " + name + ": invalid label name: " + labels[i]);
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels[i] == labels[j]) {
        throw std::invalid_argument("metric " + name + ": duplicate label name: " + labels[i]);
      }
    }
  }
}

}  // namespace

Family& Registry::Add(std::unique_ptr<Family> family) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = families_.emplace(family->name(), nullptr);
  if (!inserted) throw std::invalid_argument("metric registered twice: " + family->name());
  it->second = std::move(family);
  return *it->second;
}

CounterFamily& Registry::AddCounter(std::string name, std::string help,
                                    std::vector<std::string> label_names) {
  CheckNames(name, label_names);
  bool unlabelled = label_names.empty();
  auto& f = static_cast<CounterFamily&>(Add(std::make_unique<CounterFamily>(
      std::move(name), std::move(help), MetricType::kCounter, std::move(label_names),
      [] { return std::make_unique<Counter>(); })));
  if (unlabelled) f.With({});
  return f;
}

GaugeFamily& Registry::AddGauge(std::string name, std::string help,
                                std::vector<std::string> label_names) {
  CheckNames(name, label_names);
  bool unlabelled = label_names.empty();
  auto& f = static_cast<GaugeFamily&>(Add(std::make_unique<GaugeFamily>(
      std::move(name), std::move(help), MetricType::kGauge, std::move(label_names),
      [] { return std::make_unique<Gauge>(); })));
  if (unlabelled) f.With({});
  return f;
}

HistogramFamily& Registry::AddHistogram(std::string name, std::string help,
                                        std::vector<std::string> label_names,
                                        std::vector<double> upper_bounds) {
  CheckNames(name, label_names);
  if (std::find(label_names.begin(), label_names.end(), "le") != label_names.end()) {
    throw std::invalid_argument("histogram " + name + ": \"le\" is reserved");
  }
  CheckBounds(upper_bounds);
  bool unlabelled = label_names.empty();
  auto& f = static_cast<HistogramFamily&>(Add(std::make_unique<HistogramFamily>(
      std::move(name), std::move(help), MetricType::kHistogram, std::move(label_names),
      [bounds = std::move(upper_bounds)] { return std::make_unique<Histogram>(bounds); })));
  if (unlabelled) f.With({});
  return f;
}

std::string Registry::Expose() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, family] : families_) family->Render(out);
  return out;
}

}  // namespace gantry::obs
