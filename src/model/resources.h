// Resource vectors: the small value type every fit check, queue share and node counter is made of.
//
// Units follow KAI: CPU in millicores, memory in bytes, GPUs as a (possibly fractional) device
// count, pods as a slot count. Extended resources (MIG profiles such as nvidia.com/mig-1g.10gb,
// vendor devices) live in a fixed number of inline slots whose names are interned per cluster by
// a ResourceNames table, so a Resources value never allocates and copies as plain memory.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gantry {

// Maximum number of distinct extended resources one cluster may use.
inline constexpr int kMaxScalarResources = 8;

// The well-known extended resource names.
inline constexpr std::string_view kGpuResourceName = "nvidia.com/gpu";
inline constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

// A MIG profile resource name, "nvidia.com/mig-<g>g.<m>gb": sets the instance's GPU slices (g) and
// memory in GB (m). False for any other name.
bool ParseMigProfile(std::string_view name, int& gpus, int& memory_gb);
// KAI's test for a GPU device class or DRA driver name: it contains "gpu", in any case.
bool IsGpuDeviceClass(std::string_view name);

struct Resources {
  double cpu_millis = 0;
  double memory_bytes = 0;
  double gpus = 0;  // whole devices, or a fraction for shared-GPU accounting
  double pods = 0;
  std::array<double, kMaxScalarResources> scalars{};

  Resources& operator+=(const Resources& o) {
    cpu_millis += o.cpu_millis;
    memory_bytes += o.memory_bytes;
    gpus += o.gpus;
    pods += o.pods;
    for (int i = 0; i < kMaxScalarResources; ++i) scalars[i] += o.scalars[i];
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    cpu_millis -= o.cpu_millis;
    memory_bytes -= o.memory_bytes;
    gpus -= o.gpus;
    pods -= o.pods;
    for (int i = 0; i < kMaxScalarResources; ++i) scalars[i] -= o.scalars[i];
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend bool operator==(const Resources&, const Resources&) = default;

  // True when every component of *this is <= the same component of `capacity`.
  bool FitsIn(const Resources& capacity) const {
    if (cpu_millis > capacity.cpu_millis || memory_bytes > capacity.memory_bytes ||
        gpus > capacity.gpus || pods > capacity.pods) {
      return false;
    }
    for (int i = 0; i < kMaxScalarResources; ++i) {
      if (scalars[i] > capacity.scalars[i]) return false;
    }
    return true;
  }
  // FitsIn against the sum of two capacities, without building the sum; only the first
  // `num_scalars` extended-resource slots are compared (the ones a cluster uses).
  bool FitsInSum(const Resources& a, const Resources& b, int num_scalars) const {
    if (gpus > a.gpus + b.gpus || cpu_millis > a.cpu_millis + b.cpu_millis ||
        memory_bytes > a.memory_bytes + b.memory_bytes || pods > a.pods + b.pods) {
      return false;
    }
    for (int i = 0; i < num_scalars; ++i) {
      if (scalars[i] > a.scalars[i] + b.scalars[i]) return false;
    }
    return true;
  }
  // Like FitsIn but ignores GPUs (used for shared-GPU requests, whose device fit is separate).
  bool FitsInIgnoringGpus(const Resources& capacity) const {
    Resources self = *this;
    self.gpus = 0;
    Resources cap = capacity;
    cap.gpus = 0;
    return self.FitsIn(cap);
  }
  bool HasScalars() const {
    for (double v : scalars) {
      if (v != 0) return true;
    }
    return false;
  }
};

// Interns extended-resource names to scalar slots. One table per cluster.
class ResourceNames {
 public:
  // Returns the slot of `name`, adding it if new; -1 when all slots are taken.
  int Intern(std::string_view name);
  // Returns the slot of `name` or -1.
  int Find(std::string_view name) const;
  const std::string& Name(int slot) const { return names_[static_cast<size_t>(slot)]; }
  int size() const { return static_cast<int>(names_.size()); }
  bool IsMig(int slot) const { return Name(slot).rfind(kMigResourcePrefix, 0) == 0; }

 private:
  std::vector<std::string> names_;
};

// Three-resource quantities used by queue accounting (proportion): cpu millis, memory bytes, GPUs.
enum class QueueResource : int { kCpu = 0, kMemory = 1, kGpu = 2 };
inline constexpr std::array<QueueResource, 3> kQueueResources = {
    QueueResource::kCpu, QueueResource::kMemory, QueueResource::kGpu};

struct Quantities {
  std::array<double, 3> v{};
  double& operator[](QueueResource r) { return v[static_cast<int>(r)]; }
  double operator[](QueueResource r) const { return v[static_cast<int>(r)]; }
  Quantities& operator+=(const Quantities& o) {
    for (int i = 0; i < 3; ++i) v[i] += o.v[i];
    return *this;
  }
  Quantities& operator-=(const Quantities& o) {
    for (int i = 0; i < 3; ++i) v[i] -= o.v[i];
    return *this;
  }
  friend bool operator==(const Quantities&, const Quantities&) = default;
};

// -1 in a queue's quota or limit means "unlimited / not set".
inline constexpr double kUnlimited = -1;

// Renders a number the way Go's %v prints a float64 (shortest round-trip form).
std::string FormatNumber(double v);

// KAI's HumanizeResource: value / divisor, printed with up to 3 decimals and no trailing zeros.
std::string Humanize(double value, double divisor);

}  // namespace gantry
