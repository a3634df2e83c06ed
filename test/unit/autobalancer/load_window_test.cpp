#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "moonmq/autobalancer/model/load_window.hpp"

using moonmq::autobalancer::load_window;
using moonmq::autobalancer::load_window_set;
using moonmq::autobalancer::sample_percentile;

TEST_CASE("an empty load window reports zero", "[load_window]") {
  load_window w(10);
  CHECK(w.size() == 0);
  CHECK(w.percentile(0.9) == 0.0);
  CHECK(w.latest() == 0.0);
}

TEST_CASE("the load figure is the nearest-rank percentile of the window", "[load_window]") {
  load_window w(10);
  for (int i = 1; i <= 10; ++i) w.record(i * 100.0);
  CHECK(w.percentile(0.9) == 900.0);  // rank ceil(0.9*10)=9
  CHECK(w.percentile(0.5) == 500.0);
  CHECK(w.percentile(1.0) == 1000.0);
  CHECK(w.percentile(0.01) == 100.0);
}

TEST_CASE("a full window evicts its oldest sample", "[load_window]") {
  load_window w(3);
  w.record(1000);
  w.record(1);
  w.record(2);
  CHECK(w.percentile(1.0) == 1000.0);
  w.record(3);  // evicts 1000
  CHECK(w.size() == 3);
  CHECK(w.percentile(1.0) == 3.0);
  CHECK(w.latest() == 3.0);
}

TEST_CASE("one burst does not move the p90 of a long window", "[load_window]") {
  load_window w(60);
  for (int i = 0; i < 59; ++i) w.record(10.0);
  w.record(1e9);
  CHECK(w.percentile(0.9) == 10.0);
}

TEST_CASE("the cached figure is refreshed by a new sample and by another percentile", "[load_window]") {
  load_window w(4);
  w.record(1);
  w.record(2);
  CHECK(w.percentile(1.0) == 2.0);
  CHECK(w.percentile(0.5) == 1.0);
  w.record(7);
  CHECK(w.percentile(1.0) == 7.0);
}

TEST_CASE("negative samples are clamped to zero", "[load_window]") {
  load_window w(2);
  w.record(-5);
  CHECK(w.percentile(1.0) == 0.0);
}

TEST_CASE("a copied window is independent of its original", "[load_window]") {
  load_window a(3);
  a.record(5);
  load_window b = a;
  b.record(9);
  CHECK(a.percentile(1.0) == 5.0);
  CHECK(b.percentile(1.0) == 9.0);
}

TEST_CASE("windows larger than the stack buffer still compute percentiles", "[load_window]") {
  load_window w(1000);
  for (int i = 1; i <= 1000; ++i) w.record(i);
  CHECK(w.percentile(0.9) == 900.0);
}

TEST_CASE("the figure kept current as samples arrive is always the one computed from the window", "[load_window]") {
  // Random streams, with ties and bursts, through windows of several sizes and percentiles: after every sample the
  // figure equals the nearest-rank percentile of the samples in the window, computed afresh.
  std::mt19937 rng(11);
  for (std::uint32_t capacity : {1u, 5u, 20u, 60u}) {
    for (double p : {0.5, 0.9, 0.99, 1.0}) {
      load_window_set set(capacity);
      set.add();
      set.add();
      std::vector<float> mirror;
      std::uniform_int_distribution<int> pick(0, 9);
      for (int i = 0; i < 2000; ++i) {
        const int r = pick(rng);
        const float v = r < 3 ? 5.0f : r < 9 ? static_cast<float>(pick(rng)) : 100.0f + static_cast<float>(i % 7);
        set.record(1, v);
        mirror.push_back(v);
        if (mirror.size() > capacity) mirror.erase(mirror.begin());
        const float expected = sample_percentile(mirror.data(), static_cast<std::uint32_t>(mirror.size()), p);
        if (i % 3 != 0) continue;  // the figure is not always asked for between samples
        INFO("capacity " << capacity << " p " << p << " sample " << i);
        REQUIRE(set.percentile(1, p) == Approx(expected));
      }
      CHECK(set.percentile(0, p) == 0.0);  // the other window is untouched
    }
  }
}
