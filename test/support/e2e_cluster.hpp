// What the end-to-end tests do to real moonmqd again and again: read a JSON answer, and move a partition by hand
// and wait for the move to finish.
#pragma once

#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "support/daemon_process.hpp"
#include "support/eventually.hpp"

namespace moonmq::test {

inline rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str(), s.size());
  return d;
}

/// Moves t-`partition` from `from` to `dest` through the client API and waits until it succeeded.
inline void move(const moonmqd_process& from, int partition, const std::string& dest, const std::string& topic = "t") {
  using namespace std::chrono_literals;
  auto api = from.api();
  auto r = api.Post("/v1/reassignments",
                    "{\"topic\":\"" + topic + "\",\"partition\":" + std::to_string(partition) + ",\"dest\":\"" + dest +
                        "\"}",
                    "application/json");
  REQUIRE(r);
  REQUIRE(r->status == 202);
  const bool finished = eventually(
      [&] {
        auto p = api.Get("/v1/reassignments");
        REQUIRE(p);
        auto d = parse(p->body);
        const auto& list = d["reassignments"];
        const auto& last = list[list.Size() - 1];
        if (!last["finished"].GetBool()) return false;
        REQUIRE(last["succeeded"].GetBool());
        return true;
      },
      20s, 20ms);
  if (!finished) FAIL("the move of " << topic << "-" << partition << " did not finish");
}

}  // namespace moonmq::test
