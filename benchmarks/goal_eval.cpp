// goal_eval: how long freezing the model and detecting take on synthetic clusters of growing size.
//
// Each size runs in a child process (so peak RSS is that size's own). A cluster has Zipf-skewed partition loads
// (partition rank r carries load proportional to 1/r) and skewed placement (broker b receives partitions with
// probability proportional to 1/(b+1)^0.8), every partition fed a full window of noisy samples through
// cluster_model. Printed per size, one JSON object per line:
//   brokers, partitions, window, model_bytes_per_partition, freeze_ms, detect_ms (default MaxActionsPerDetect=50,
//   all four goals), actions, detect_unbounded_ms and actions_unbounded (no action cap: the whole plan at once),
//   plan_unbounded_hash (a fingerprint of that plan: a change meant only to be faster must leave it the same),
//   peak_rss_mb.
//
//   goal_eval                         the three standard sizes: 10x1k, 100x100k, 1000x1M
//   goal_eval BROKERS PARTITIONS      one size
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "moonmq/autobalancer/detector.hpp"
#include "moonmq/autobalancer/model/cluster_model.hpp"

using namespace moonmq;
using namespace moonmq::autobalancer;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

/// Samples an index in [0, n) with probability proportional to 1/(i+1)^s.
class zipf {
 public:
  zipf(std::size_t n, double s) : cdf_(n) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) cdf_[i] = (sum += 1.0 / std::pow(static_cast<double>(i + 1), s));
    for (auto& c : cdf_) c /= sum;
  }
  template <typename Rng>
  std::size_t operator()(Rng& rng) {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return static_cast<std::size_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

void run_size(std::size_t brokers, std::size_t partitions, std::uint32_t window) {
  std::mt19937_64 rng(42);
  const double rss_before = current_rss_bytes();
  cluster_model model(window, 1, 0.9);
  for (std::size_t b = 0; b < brokers; ++b) model.set_broker("broker-" + std::to_string(b), true);

  // Zipf loads by rank, ranks shuffled over partitions; mean inbound 20 MiB/s per broker overall.
  std::vector<double> weight(partitions);
  double weight_sum = 0;
  for (std::size_t i = 0; i < partitions; ++i) weight_sum += weight[i] = 1.0 / static_cast<double>(i + 1);
  std::shuffle(weight.begin(), weight.end(), rng);
  const double total_in = static_cast<double>(brokers) * 20.0 * 1024 * 1024;
  zipf placement(brokers, 0.8);
  std::uniform_real_distribution<double> noise(0.8, 1.2);
  const std::size_t topics = std::max<std::size_t>(1, partitions / 100);
  for (std::size_t i = 0; i < partitions; ++i) {
    topic_partition tp{"topic-" + std::to_string(i % topics), static_cast<std::int32_t>(i / topics)};
    model.set_owner(tp, "broker-" + std::to_string(placement(rng)));
    double in = total_in * weight[i] / weight_sum;
    double out = in * 2.0;
    for (std::uint32_t k = 0; k < window; ++k) {
      model.record_nw_in(tp, in * noise(rng));
      model.record_nw_out(tp, out * noise(rng));
    }
    model.set_disk(tp, static_cast<std::uint64_t>(in * 3600.0 * noise(rng)));
  }
  const double model_bytes = current_rss_bytes() - rss_before;

  double t0 = now_ms();
  snapshot snap = model.freeze();
  double freeze_ms = now_ms() - t0;

  // The next passes: a tenth of the windows got a new sample since the last freeze, then none did. (freeze_ms above
  // is the first freeze of a model whose windows were all filled at once: every figure is computed afresh.)
  {
    std::mt19937_64 again(7);
    for (std::size_t i = 0; i < partitions; i += 10) {
      topic_partition tp{"topic-" + std::to_string(i % topics), static_cast<std::int32_t>(i / topics)};
      model.record_nw_in(tp, total_in * weight[i] / weight_sum * noise(again));
      model.record_nw_out(tp, 2 * total_in * weight[i] / weight_sum * noise(again));
    }
  }
  auto timed_freeze = [&] {  // the snapshot is freed after the clock stops
    const double start = now_ms();
    snapshot s = model.freeze();
    return now_ms() - start;
  };
  const double freeze_tenth_ms = timed_freeze();
  const double freeze_unchanged_ms = timed_freeze();
  // And a pass after every window got one new sample.
  {
    std::mt19937_64 again(9);
    for (std::size_t i = 0; i < partitions; ++i) {
      topic_partition tp{"topic-" + std::to_string(i % topics), static_cast<std::int32_t>(i / topics)};
      model.record_nw_in(tp, total_in * weight[i] / weight_sum * noise(again));
      model.record_nw_out(tp, 2 * total_in * weight[i] / weight_sum * noise(again));
    }
  }
  const double freeze_all_ms = timed_freeze();

  autobalance_config config;  // defaults: the four goals, MaxActionsPerDetect 50
  auto detector = anomaly_detector::create(config);
  double detect_ms = 1e300;
  std::size_t actions = 0;
  for (int rep = 0; rep < 3; ++rep) {
    t0 = now_ms();
    plan p = detector->detect(snap);
    detect_ms = std::min(detect_ms, now_ms() - t0);
    actions = p.actions.size();
  }

  autobalance_config unbounded = config;
  unbounded.max_actions_per_detect = 0xffffffffu;
  auto full = anomaly_detector::create(unbounded);
  plan all;
  double unbounded_ms = 1e300;  // the best of three, as for the capped pass: this machine's neighbours are noisy
  for (int rep = 0; rep < 3; ++rep) {
    t0 = now_ms();
    all = full->detect(snap);
    unbounded_ms = std::min(unbounded_ms, now_ms() - t0);
  }

  // A fingerprint of the uncapped plan (every action and the goal that chose it), so that a change meant only to be
  // faster can be seen to plan exactly the same.
  std::uint64_t plan_hash = 1469598103934665603ull;
  auto mix = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) plan_hash = (plan_hash ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  };
  for (std::size_t i = 0; i < all.actions.size(); ++i) {
    const auto& a = all.actions[i];
    mix(static_cast<std::uint64_t>(a.type));
    mix(a.partition);
    mix(a.src);
    mix(a.dest);
    mix(a.swap_partition);
    for (char ch : i < all.chosen_by.size() ? all.chosen_by[i] : std::string()) mix(static_cast<unsigned char>(ch));
  }

  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf(
      "{\"bench\":\"goal_eval\",\"brokers\":%zu,\"partitions\":%zu,\"window\":%u,\"model_bytes_per_partition\":%.0f,"
      "\"freeze_ms\":%.2f,\"freeze_tenth_changed_ms\":%.2f,\"freeze_unchanged_ms\":%.2f,\"freeze_all_changed_ms\":%.2f,\"detect_ms\":%.2f,\"actions\":%zu,\"detect_unbounded_ms\":%.2f,\"actions_unbounded\":%zu,"
      "\"plan_unbounded_hash\":\"%016llx\",\"peak_rss_mb\":%.1f}\n",
      brokers, partitions, window, model_bytes / static_cast<double>(partitions), freeze_ms, freeze_tenth_ms,
      freeze_unchanged_ms, freeze_all_ms, detect_ms, actions,
      unbounded_ms, all.actions.size(), static_cast<unsigned long long>(plan_hash),
      static_cast<double>(ru.ru_maxrss) / 1024.0);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::size_t, std::size_t>> sizes = {{10, 1000}, {100, 100000}, {1000, 1000000}};
  if (argc == 3)
    sizes = {{std::strtoull(argv[1], nullptr, 10), std::strtoull(argv[2], nullptr, 10)}};
  else if (argc != 1) {
    std::fprintf(stderr, "usage: goal_eval [BROKERS PARTITIONS]\n");
    return 2;
  }
  for (auto [b, p] : sizes) {
    pid_t pid = fork();
    if (pid == 0) {
      run_size(b, p, 60);
      std::_Exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  return 0;
}
