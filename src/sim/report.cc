#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace gantry::sim {

namespace {

std::string Fmt(double v, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(v.size() - 1, i)];
}

std::vector<double> Waits(const Outcome& o, const std::string& queue) {
  std::vector<double> w;
  for (const auto& j : o.jobs) {
    if (j.queue == queue && j.first_start) w.push_back(*j.first_start - j.submit);
  }
  return w;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
  bool step = false;
  int color = 0;
};

// A line chart as inline SVG: axes with ticks, one polyline per series, a legend.
std::string LineChart(const std::string& id, const std::string& title, const std::string& xlabel,
                      const std::string& ylabel, std::vector<Series> series) {
  constexpr double kW = 760, kH = 300, kL = 60, kR = 170, kT = 30, kB = 45;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool first = true;
  for (auto& s : series) {
    // At most ~800 points per series (every k-th, keeping the last).
    if (s.points.size() > 800) {
      const size_t k = (s.points.size() + 799) / 800;
      std::vector<std::pair<double, double>> kept;
      for (size_t i = 0; i < s.points.size(); i += k) kept.push_back(s.points[i]);
      if (kept.back() != s.points.back()) kept.push_back(s.points.back());
      s.points = std::move(kept);
    }
    for (const auto& [x, y] : s.points) {
      if (first) {
        x0 = x1 = x;
        first = false;
      }
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y1 = std::max(y1, y);
    }
  }
  if (x1 <= x0) x1 = x0 + 1;
  y1 *= 1.05;
  auto px = [&](double x) { return kL + (x - x0) / (x1 - x0) * (kW - kL - kR); };
  auto py = [&](double y) { return kH - kB - (y - y0) / (y1 - y0) * (kH - kT - kB); };
  std::ostringstream o;
  o << "<figure id=\"" << id << "\"><figcaption>" << Escape(title) << "</figcaption>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH
    << "\" viewBox=\"0 0 " << kW << " " << kH << "\" role=\"img\" aria-label=\"" << Escape(title)
    << "\">\n<rect x=\"0\" y=\"0\" width=\"" << kW << "\" height=\"" << kH
    << "\" fill=\"#ffffff\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double yv = y0 + (y1 - y0) * i / 5;
    const double xv = x0 + (x1 - x0) * i / 5;
    o << "<line x1=\"" << kL << "\" x2=\"" << kW - kR << "\" y1=\"" << Fmt(py(yv), 1) << "\" y2=\""
      << Fmt(py(yv), 1) << "\" stroke=\"#e0e0e0\"/>"
      << "<text x=\"" << kL - 6 << "\" y=\"" << Fmt(py(yv) + 4, 1)
      << "\" font-size=\"11\" text-anchor=\"end\">" << Fmt(yv, yv >= 100 ? 0 : 1) << "</text>"
      << "<text x=\"" << Fmt(px(xv), 1) << "\" y=\"" << kH - kB + 16
      << "\" font-size=\"11\" text-anchor=\"middle\">" << Fmt(xv, xv >= 100 ? 0 : 1) << "</text>\n";
  }
  o << "<line x1=\"" << kL << "\" x2=\"" << kL << "\" y1=\"" << kT << "\" y2=\"" << kH - kB
    << "\" stroke=\"#333\"/><line x1=\"" << kL << "\" x2=\"" << kW - kR << "\" y1=\"" << kH - kB
    << "\" y2=\"" << kH - kB << "\" stroke=\"#333\"/>\n"
    << "<text x=\"" << (kL + kW - kR) / 2 << "\" y=\"" << kH - 8
    << "\" font-size=\"12\" text-anchor=\"middle\">" << Escape(xlabel) << "</text>"
    << "<text x=\"14\" y=\"" << (kT + kH - kB) / 2 << "\" font-size=\"12\" text-anchor=\"middle\" "
    << "transform=\"rotate(-90 14 " << (kT + kH - kB) / 2 << ")\">" << Escape(ylabel)
    << "</text>\n";
  int legend = 0;
  for (const auto& s : series) {
    const char* color = kColors[s.color % 10];
    if (!s.points.empty()) {
      o << "<polyline class=\"series\" fill=\"none\" stroke=\"" << color
        << "\" stroke-width=\"1.6\"" << (s.dashed ? " stroke-dasharray=\"5 3\"" : "")
        << " points=\"";
      double prev_y = 0;
      bool started = false;
      for (const auto& [x, y] : s.points) {
        if (s.step && started) o << Fmt(px(x), 1) << ',' << Fmt(py(prev_y), 1) << ' ';
        o << Fmt(px(x), 1) << ',' << Fmt(py(y), 1) << ' ';
        prev_y = y;
        started = true;
      }
      o << "\"/>\n";
    }
    const double ly = kT + 14 * legend++;
    o << "<line x1=\"" << kW - kR + 10 << "\" x2=\"" << kW - kR + 30 << "\" y1=\"" << ly
      << "\" y2=\"" << ly << "\" stroke=\"" << color << "\" stroke-width=\"2\""
      << (s.dashed ? " stroke-dasharray=\"5 3\"" : "") << "/><text x=\"" << kW - kR + 34
      << "\" y=\"" << ly + 4 << "\" font-size=\"11\">" << Escape(s.name) << "</text>\n";
  }
  o << "</svg></figure>\n";
  return o.str();
}

}  // namespace

WaitStats QueueWaits(const Outcome& o, const std::string& queue) {
  WaitStats w;
  for (const auto& j : o.jobs) {
    if (j.queue != queue) continue;
    ++w.jobs;
    w.started += j.first_start.has_value();
    w.finished += j.end.has_value();
    w.lost_work_seconds += j.lost_work_seconds;
    w.evictions += j.evictions;
  }
  const auto v = Waits(o, queue);
  w.p50 = Percentile(v, 0.5);
  w.p90 = Percentile(v, 0.9);
  w.p99 = Percentile(v, 0.99);
  double sum = 0;
  for (double x : v) sum += x;
  w.mean = v.empty() ? 0 : sum / static_cast<double>(v.size());
  return w;
}

void PrintSummary(const Outcome& o, std::ostream& out) {
  out << "simulation " << o.name << " (seed " << o.seed << "): " << o.cycles << " cycles, "
      << o.binds << " binds";
  if (o.bind_failures) out << " (" << o.bind_failures << " failed)";
  out << ", " << o.evictions.size() << " evictions, virtual time " << Fmt(o.end_time, 0)
      << (o.inflation ? " arrivals" : " s") << "\n";
  out << "cluster: " << Fmt(o.cluster_gpus, 0) << " GPUs\n";
  if (o.inflation) {
    out << "inflation: " << o.pods_arrived << " pods arrived, " << o.pods_dropped
        << " dropped; arrived GPUs " << Fmt(o.curve.empty() ? 0 : o.curve.back().arrived_gpus, 1)
        << ", allocated " << Fmt(o.curve.empty() ? 0 : o.curve.back().allocated_gpus, 1) << "\n";
    out << "gpu_allocation_ratio: " << Fmt(o.gpu_allocation_ratio) << "%\n";
    return;
  }
  out << "queue                jobs  started  finished  wait p50/p90/p99 (s)     lost work (s)  "
         "evictions\n";
  for (const auto& q : o.queues) {
    const WaitStats w = QueueWaits(o, q);
    char line[256];
    std::snprintf(line, sizeof line, "%-20s %5d  %7d  %8d  %7s/%7s/%7s  %14s  %9d\n", q.c_str(),
                  w.jobs, w.started, w.finished, Fmt(w.p50, 0).c_str(), Fmt(w.p90, 0).c_str(),
                  Fmt(w.p99, 0).c_str(), Fmt(w.lost_work_seconds, 0).c_str(), w.evictions);
    out << line;
  }
  std::map<std::string, int> by_action;
  for (const auto& e : o.evictions) ++by_action[e.action];
  for (const auto& [a, n] : by_action) out << "evictions by " << a << ": " << n << "\n";
}

nlohmann::json ToJson(const Outcome& o) {
  nlohmann::json j;
  j["name"] = o.name;
  j["seed"] = o.seed;
  j["mode"] = o.inflation ? "inflation" : "timeline";
  j["cluster_gpus"] = o.cluster_gpus;
  j["cycles"] = o.cycles;
  j["binds"] = o.binds;
  j["bind_failures"] = o.bind_failures;
  j["end_time"] = o.end_time;
  if (o.inflation) {
    j["gpu_allocation_ratio"] = std::round(o.gpu_allocation_ratio * 10000) / 10000;
    j["pods_arrived"] = o.pods_arrived;
    j["pods_dropped"] = o.pods_dropped;
    nlohmann::json curve = nlohmann::json::array();
    const size_t k = std::max<size_t>(1, o.curve.size() / 200);
    for (size_t i = 0; i < o.curve.size(); i += k) {
      curve.push_back({o.curve[i].arrived_gpus, o.curve[i].allocated_gpus});
    }
    if (!o.curve.empty())
      curve.push_back({o.curve.back().arrived_gpus, o.curve.back().allocated_gpus});
    j["curve"] = curve;
  }
  nlohmann::json queues = nlohmann::json::array();
  for (const auto& q : o.queues) {
    const WaitStats w = QueueWaits(o, q);
    queues.push_back(
        {{"name", q},
         {"jobs", w.jobs},
         {"started", w.started},
         {"finished", w.finished},
         {"wait_seconds", {{"p50", w.p50}, {"p90", w.p90}, {"p99", w.p99}, {"mean", w.mean}}},
         {"lost_work_seconds", w.lost_work_seconds},
         {"evictions", w.evictions}});
  }
  j["queues"] = queues;
  std::map<std::string, int> by_action;
  for (const auto& e : o.evictions) ++by_action[e.action];
  j["evictions_by_action"] = by_action;
  if (!o.inflation) {
    nlohmann::json placements = nlohmann::json::array();
    for (const auto& p : o.placements) {
      placements.push_back(
          {{"cycle", p.cycle}, {"time", p.t}, {"job", p.job}, {"pod", p.pod}, {"node", p.node}});
    }
    j["placements"] = placements;
  }
  return j;
}

std::string PlacementsCsv(const Outcome& o) {
  std::ostringstream out;
  out << "cycle,time,job,pod,node\n";
  for (const auto& p : o.placements) {
    out << p.cycle << ',' << Fmt(p.t, 3) << ',' << p.job << ',' << p.pod << ',' << p.node << "\n";
  }
  return out.str();
}

std::string TimelineCsv(const Outcome& o) {
  std::ostringstream out;
  out << "time,gpus_allocated,gpus_fragmented,jobs_pending,jobs_running";
  for (const auto& q : o.queues) out << ",allocated:" << q << ",fair_share:" << q;
  out << "\n";
  for (const auto& s : o.samples) {
    out << Fmt(s.t, 3) << ',' << Fmt(s.gpus_allocated, 3) << ',' << Fmt(s.gpus_fragmented, 3) << ','
        << s.jobs_pending << ',' << s.jobs_running;
    for (size_t i = 0; i < o.queues.size(); ++i) {
      out << ',' << Fmt(s.queue_allocated[i], 3) << ',' << Fmt(s.queue_fair_share[i], 3);
    }
    out << "\n";
  }
  return out.str();
}

std::string HtmlReport(const Outcome& o) {
  const std::string xl = o.inflation ? "pods arrived" : "time (s)";
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<title>gantry simulate: " << Escape(o.name) << "</title>\n<style>body{font-family:"
    << "sans-serif;margin:24px;color:#222;background:#fff}figure{margin:18px 0}figcaption{"
    << "font-weight:bold;margin-bottom:4px}table{border-collapse:collapse}td,th{border:1px solid "
    << "#ccc;padding:3px 8px;text-align:right}</style></head><body>\n<h1>gantry simulate: "
    << Escape(o.name) << "</h1>\n<p>seed " << o.seed << ", " << o.cycles << " cycles, " << o.binds
    << " binds, " << o.evictions.size() << " evictions, " << Fmt(o.cluster_gpus, 0) << " GPUs.";
  if (o.inflation) {
    h << " GPU allocation ratio: <b id=\"gpu-allocation-ratio\">" << Fmt(o.gpu_allocation_ratio)
      << "%</b> (" << o.pods_arrived << " pods arrived, " << o.pods_dropped << " dropped).";
  }
  h << "</p>\n";
  // Per-queue allocation vs fair share.
  {
    std::vector<Series> s;
    for (size_t q = 0; q < o.queues.size(); ++q) {
      Series a{o.queues[q] + " allocated", {}, false, true, static_cast<int>(q)};
      Series f{o.queues[q] + " fair share", {}, true, true, static_cast<int>(q)};
      for (const auto& smp : o.samples) {
        a.points.emplace_back(smp.t, smp.queue_allocated[q]);
        f.points.emplace_back(smp.t, smp.queue_fair_share[q]);
      }
      s.push_back(std::move(a));
      s.push_back(std::move(f));
    }
    h << LineChart("chart-queues", "GPU allocation vs fair share per queue", xl, "GPUs", s);
  }
  {
    Series u{"allocated %", {}, false, true, 0};
    Series f{"fragmented % (free GPU typical pods cannot use)", {}, true, true, 1};
    const double g = o.cluster_gpus > 0 ? o.cluster_gpus : 1;
    for (const auto& smp : o.samples) {
      u.points.emplace_back(smp.t, 100 * smp.gpus_allocated / g);
      f.points.emplace_back(smp.t, 100 * smp.gpus_fragmented / g);
    }
    h << LineChart("chart-utilization", "GPU utilization and fragmentation", xl,
                   "% of cluster GPUs", {u, f});
  }
  {
    Series p{"pending jobs", {}, false, true, 3};
    Series r{"running jobs", {}, true, true, 2};
    for (const auto& smp : o.samples) {
      p.points.emplace_back(smp.t, smp.jobs_pending);
      r.points.emplace_back(smp.t, smp.jobs_running);
    }
    h << LineChart("chart-pending", "Pending and running jobs", xl, "jobs", {p, r});
  }
  {
    std::vector<Series> s;
    h << "<table id=\"wait-table\"><tr><th>queue</th><th>jobs</th><th>started</th><th>finished"
      << "</th><th>wait p50 (s)</th><th>p90</th><th>p99</th><th>mean</th><th>lost work (s)</th>"
      << "<th>evictions</th></tr>\n";
    for (size_t q = 0; q < o.queues.size(); ++q) {
      const WaitStats w = QueueWaits(o, o.queues[q]);
      h << "<tr><td>" << Escape(o.queues[q]) << "</td><td>" << w.jobs << "</td><td>" << w.started
        << "</td><td>" << w.finished << "</td><td>" << Fmt(w.p50, 0) << "</td><td>" << Fmt(w.p90, 0)
        << "</td><td>" << Fmt(w.p99, 0) << "</td><td>" << Fmt(w.mean, 0) << "</td><td>"
        << Fmt(w.lost_work_seconds, 0) << "</td><td>" << w.evictions << "</td></tr>\n";
      auto v = Waits(o, o.queues[q]);
      std::sort(v.begin(), v.end());
      Series c{o.queues[q], {}, false, true, static_cast<int>(q)};
      for (size_t i = 0; i < v.size(); ++i) {
        c.points.emplace_back(v[i],
                              100.0 * static_cast<double>(i + 1) / static_cast<double>(v.size()));
      }
      s.push_back(std::move(c));
    }
    h << "</table>\n";
    h << LineChart("chart-waits", "Wait time CDF per queue (submit to first start)", "wait (s)",
                   "% of started jobs", s);
  }
  {
    std::map<std::string, std::vector<std::pair<double, double>>> by;
    std::map<std::string, int> counts;
    for (const auto& e : o.evictions) by[e.action].emplace_back(e.t, ++counts[e.action]);
    std::vector<Series> s;
    int c = 0;
    for (auto& [a, pts] : by) {
      pts.insert(pts.begin(), {0.0, 0.0});
      pts.emplace_back(o.end_time, pts.back().second);
      s.push_back({a, pts, false, true, c++});
    }
    if (s.empty()) s.push_back({"no evictions", {{0, 0}, {o.end_time, 0}}, false, true, 7});
    h << LineChart("chart-evictions", "Evictions by action (cumulative)", xl, "pods evicted", s);
  }
  if (o.inflation) {
    Series a{"allocated GPUs", {}, false, false, 0};
    Series d{"arrived GPUs (ideal)", {}, true, false, 7};
    for (const auto& p : o.curve) {
      a.points.emplace_back(p.arrived_gpus, p.allocated_gpus);
      d.points.emplace_back(p.arrived_gpus, std::min(p.arrived_gpus, o.cluster_gpus));
    }
    h << LineChart("chart-inflation", "GPU allocation vs arrived GPU demand", "arrived GPUs",
                   "allocated GPUs", {a, d});
  }
  h << "</body></html>\n";
  return h.str();
}

}  // namespace gantry::sim
