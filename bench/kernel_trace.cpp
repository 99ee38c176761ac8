#include "kernel_trace.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#if defined(SGMCMC_CUPTI)
#include <cupti.h>
#endif

namespace sgmcmc::bench {
namespace {


std::string label_of(const GpuActivity& a) {
  return a.kind == GpuActivity::kKernel ? a.name : a.name + " " + std::to_string(a.bytes) + " B";
}

#if defined(SGMCMC_CUPTI)
// "void ns::(anonymous namespace)::k<float, 32>(Args<float>)" -> "k<float, 32>": the kernel's own name
// and template arguments, without its namespaces and parameters.
std::string short_name(const char* mangled) {
  if (mangled == nullptr) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string s = status == 0 && d ? d.get() : mangled;
  for (const std::string anon : {"(anonymous namespace)::", "{anonymous}::"})
    for (size_t p; (p = s.find(anon)) != std::string::npos;) s.erase(p, anon.size());
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  int depth = 0;
  size_t name_start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0 && c == ':' && i + 1 < s.size() && s[i + 1] == ':') name_start = i + 2, ++i;
    else if (depth == 0 && c == '(') {
      s = s.substr(name_start, i - name_start);
      break;
    }
  }
  return s.size() > 90 ? s.substr(0, 87) + "..." : s;
}

std::mutex records_mutex;
std::vector<GpuActivity> records;
bool callbacks_registered = false;
constexpr size_t kBufferBytes = size_t{8} << 20;
const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                     CUPTI_ACTIVITY_KIND_MEMSET};

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  throw std::runtime_error(std::string("CUPTI: ") + what + ": " + (text ? text : "error " + std::to_string(r)));
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

const char* copy_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    default: return "memcpy";
  }
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<GpuActivity> got;
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    GpuActivity a;
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      a.kind = GpuActivity::kKernel, a.name = short_name(k->name), a.start = k->start, a.end = k->end;
      a.correlation = k->correlationId, a.graph = k->graphId, a.stream = k->streamId;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      a.kind = GpuActivity::kMemcpy, a.name = copy_kind(m->copyKind), a.start = m->start, a.end = m->end;
      a.correlation = m->correlationId, a.graph = m->graphId, a.stream = m->streamId;
      a.bytes = static_cast<int64_t>(m->bytes);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      a.kind = GpuActivity::kMemset, a.name = "memset", a.start = m->start, a.end = m->end;
      a.correlation = m->correlationId, a.graph = m->graphId, a.stream = m->streamId;
      a.bytes = static_cast<int64_t>(m->bytes);
    } else {
      continue;
    }
    got.push_back(std::move(a));
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(records_mutex);
  records.insert(records.end(), got.begin(), got.end());
}
#endif

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#if defined(SGMCMC_CUPTI)
bool kernel_trace_available() { return true; }

void kernel_trace_start() {
  if (!callbacks_registered) {
    check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
    callbacks_registered = true;
  }
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    records.clear();
  }
  for (const auto k : kKinds) check(cuptiActivityEnable(k), "cuptiActivityEnable");
}

uint64_t kernel_trace_now() {
  uint64_t t = 0;
  check(cuptiGetTimestamp(&t), "cuptiGetTimestamp");
  return t;
}

std::vector<GpuActivity> kernel_trace_take() {
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::vector<GpuActivity> out;
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    out.swap(records);
  }
  std::sort(out.begin(), out.end(), [](const GpuActivity& a, const GpuActivity& b) { return a.start < b.start; });
  return out;
}

std::vector<GpuActivity> kernel_trace_stop() {
  auto out = kernel_trace_take();
  for (const auto k : kKinds) check(cuptiActivityDisable(k), "cuptiActivityDisable");
  return out;
}
#else
bool kernel_trace_available() { return false; }
void kernel_trace_start() { throw std::runtime_error("kernel trace: this build has no CUPTI (a CUDA build with CUDA::cupti)"); }
uint64_t kernel_trace_now() { return 0; }
std::vector<GpuActivity> kernel_trace_stop() { return {}; }
std::vector<GpuActivity> kernel_trace_take() { return {}; }
#endif

nlohmann::ordered_json summarise_kernel_trace(const std::vector<GpuActivity>& acts, int64_t steps_per_launch, bool print) {
  // Launches: a graph launch's nodes (one correlation id), with the activities outside graphs that came
  // just before it (the step's host-to-device copies) in front.
  std::vector<std::vector<const GpuActivity*>> launches;
  std::vector<const GpuActivity*> cur;
  for (size_t i = 0; i < acts.size(); ++i) {
    cur.push_back(&acts[i]);
    const bool graph_node = acts[i].graph != 0;
    const bool next_same =
        i + 1 < acts.size() && acts[i + 1].graph != 0 && acts[i + 1].correlation == acts[i].correlation;
    if (graph_node && !next_same) launches.push_back(std::move(cur)), cur.clear();
  }
  nlohmann::ordered_json j;
  j["activities"] = acts.size();
  j["launches"] = launches.size();
  if (launches.size() < 2) {
    // no graph launches (an eager step): per activity name, count and device time over the trace
    std::map<std::string, std::pair<int64_t, double>> by_name;
    for (const auto& a : acts) {
      auto& e = by_name[label_of(a)];
      ++e.first, e.second += (a.end - a.start) * 1e-3;
    }
    if (print) std::cout << "  kernel trace: " << acts.size() << " activities, no graph launches; per name: count, total us\n";
    for (const auto& [name, e] : by_name) {
      if (print)
        std::cout << "    " << std::setw(7) << e.first << "  " << std::setw(10) << std::setprecision(1) << std::fixed
                << e.second << "  " << name << "\n";
      j["by_name"].push_back({{"name", name}, {"count", e.first}, {"total_us", e.second}});
    }
    return j;
  }
  // the modal sequence of activities, the first launch left out (no launch before it to measure a gap to)
  std::map<std::vector<std::string>, int> seqs;
  auto seq_of = [](const std::vector<const GpuActivity*>& l) {
    std::vector<std::string> s;
    for (const auto* a : l) s.push_back(label_of(*a));
    return s;
  };
  for (size_t i = 1; i < launches.size(); ++i) ++seqs[seq_of(launches[i])];
  const auto modal = std::max_element(seqs.begin(), seqs.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  const size_t k = modal.size();
  std::vector<std::vector<double>> dur(k), gap(k);
  std::vector<double> span, busy, before, period;
  auto end_of = [](const std::vector<const GpuActivity*>& l) {
    uint64_t e = 0;
    for (const auto* a : l) e = std::max(e, a->end);
    return e;
  };
  for (size_t i = 1; i < launches.size(); ++i) {
    const auto& l = launches[i];
    if (seq_of(l) != modal) continue;
    const uint64_t prev_end = end_of(launches[i - 1]);
    uint64_t last = prev_end, covered_to = l.front()->start;
    double union_ns = 0;
    for (size_t p = 0; p < k; ++p) {
      const auto* a = l[p];
      dur[p].push_back((a->end - a->start) * 1e-3);
      gap[p].push_back((static_cast<double>(a->start) - static_cast<double>(last)) * 1e-3);
      last = std::max(last, a->end);
      if (a->end > covered_to) union_ns += a->end - std::max(a->start, covered_to), covered_to = a->end;
    }
    span.push_back((end_of(l) - l.front()->start) * 1e-3);
    busy.push_back(union_ns * 1e-3);
    before.push_back((static_cast<double>(l.front()->start) - static_cast<double>(prev_end)) * 1e-3);
    period.push_back((static_cast<double>(l.front()->start) - static_cast<double>(launches[i - 1].front()->start)) * 1e-3);
  }
  const double per = static_cast<double>(std::max<int64_t>(steps_per_launch, 1));
  if (print)
    std::cout << std::fixed << std::setprecision(1) << "  kernel trace: " << launches.size() << " launches, "
            << span.size() << " with the modal sequence of " << k << " activities (" << steps_per_launch
            << " step(s) a launch)\n"
            << "    a launch, medians: period " << median(period) << " us (" << median(period) / per
            << " a step), span " << median(span) << ", busy " << median(busy) << ", idle before it "
            << median(before) << "\n"
            << "      #   dur us   gap us  activity (gap: from the previous activity's end)\n";
  j["modal_launches"] = span.size();
  j["period_us"] = median(period), j["period_us_per_step"] = median(period) / per;
  j["span_us"] = median(span), j["busy_us"] = median(busy), j["idle_before_us"] = median(before);
  for (size_t p = 0; p < k; ++p) {
    if (!print) {
      j["positions"].push_back({{"activity", modal[p]}, {"dur_us", median(dur[p])}, {"gap_us", median(gap[p])}});
      continue;
    }
    if (p == 48 && k > 64) std::cout << "    ... (" << k - 64 << " more; all of them in the JSON line)\n";
    if (p >= 48 && p + 16 < k && k > 64) {  // a block of steps a launch: its first and last activities printed
      j["positions"].push_back({{"activity", modal[p]}, {"dur_us", median(dur[p])}, {"gap_us", median(gap[p])}});
      continue;
    }
    std::cout << "    " << std::setw(3) << p << "  " << std::setw(7) << median(dur[p]) << "  " << std::setw(7)
              << median(gap[p]) << "  " << modal[p] << "\n";
    j["positions"].push_back({{"activity", modal[p]}, {"dur_us", median(dur[p])}, {"gap_us", median(gap[p])}});
  }
  return j;
}

nlohmann::ordered_json summarise_by_graph(const std::vector<GpuActivity>& acts, bool print) {
  struct Launch {
    uint64_t first = UINT64_MAX, last = 0;
    double busy_ns = 0;
    int64_t count = 0;
    uint64_t covered_to = 0;
    std::string first_name;  // its earliest activity (the records come by start time)
  };
  std::map<uint32_t, std::map<uint32_t, Launch>> graphs;  // graph id -> correlation -> its launch
  std::map<std::string, std::pair<int64_t, double>> outside;
  for (const auto& a : acts) {  // by start time: the union of a launch's intervals as it goes
    if (a.graph == 0) {
      auto& e = outside[label_of(a)];
      ++e.first, e.second += (a.end - a.start) * 1e-3;
      continue;
    }
    Launch& l = graphs[a.graph][a.correlation];
    if (l.count == 0) l.covered_to = a.start, l.first_name = label_of(a);
    l.first = std::min(l.first, a.start), l.last = std::max(l.last, a.end), ++l.count;
    if (a.end > l.covered_to) l.busy_ns += a.end - std::max(a.start, l.covered_to), l.covered_to = a.end;
  }
  struct Row {
    std::string what;
    int64_t launches;
    double activities, span_us, busy_us, total_busy_us;
  };
  std::vector<Row> rows;
  for (const auto& [id, ls] : graphs) {
    std::vector<double> n, span, busy;
    double total = 0;
    for (const auto& [c, l] : ls) {
      n.push_back(static_cast<double>(l.count)), span.push_back((l.last - l.first) * 1e-3), busy.push_back(l.busy_ns * 1e-3);
      total += l.busy_ns * 1e-3;
    }
    rows.push_back({"graph " + std::to_string(id) + " (first: " + ls.begin()->second.first_name + ")",
                    static_cast<int64_t>(ls.size()), median(n), median(span), median(busy), total});
  }
  for (const auto& [name, e] : outside)
    rows.push_back({name, e.first, 1, e.second / static_cast<double>(e.first), e.second / static_cast<double>(e.first), e.second});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.total_busy_us > b.total_busy_us; });
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  if (print)
    std::cout << std::fixed << std::setprecision(1) << "  by graph (medians a launch; the activities outside graphs by name)\n"
              << "    launches  activities   span us   busy us   total busy ms  what\n";
  for (const auto& r : rows) {
    if (print && j.size() < 40)
      std::cout << "    " << std::setw(8) << r.launches << "  " << std::setw(10) << r.activities << "  " << std::setw(8)
                << r.span_us << "  " << std::setw(8) << r.busy_us << "  " << std::setw(14) << std::setprecision(3)
                << r.total_busy_us * 1e-3 << std::setprecision(1) << "  " << r.what << "\n";
    j.push_back({{"what", r.what}, {"launches", r.launches}, {"activities", r.activities}, {"span_us", r.span_us},
                 {"busy_us", r.busy_us}, {"total_busy_us", r.total_busy_us}});
  }
  return j;
}

}  // namespace sgmcmc::bench
