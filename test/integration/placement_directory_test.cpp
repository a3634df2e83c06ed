// The placement directory over brokers on the loopback network: one picture of who serves what from every broker's
// own report, a silent broker asked again only after a while, what requests learn, and refreshes on a miss.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "moonmq/frontend/placement_directory.hpp"
#include "support/in_process_cluster.hpp"

using namespace moonmq;

namespace {

struct directory_of_b1 {
  test::in_process_cluster c{3};
  frontend::time_ms now = 1'000;
  frontend::placement_directory d{
      {broker_id("b1"),
       {broker_id("b1"), broker_id("b2"), broker_id("b3")},
       [this] { return cluster::collect_local_loads(c[1].store, c[1].counters, *c[1].ownership, broker_id("b1")); },
       [this] { return now; },
       5000,
       10'000,
       1000},
      *c[1].peers};

  directory_of_b1() {
    REQUIRE(c[1].store.ensure_topic("t", 3));
    REQUIRE(c.move(1, {"t", 1}, 2));
    REQUIRE(c.move(1, {"t", 2}, 3));
  }
};

}  // namespace

TEST_CASE("placement directory: every broker's report, one owner per partition, known once all reported",
          "[frontend][integration]") {
  directory_of_b1 x;
  CHECK_FALSE(x.d.known());
  CHECK_FALSE(x.d.placements({"t"}));  // nothing is placed before the picture is known
  x.d.refresh();
  REQUIRE(x.d.known());
  CHECK(x.d.owner_of({"t", 0}) == broker_id("b1"));
  CHECK(x.d.owner_of({"t", 1}) == broker_id("b2"));
  CHECK(x.d.owner_of({"t", 2}) == broker_id("b3"));
  auto owners = x.d.topic_owners("t");
  CHECK(owners.size() == 3);
  auto placed = x.d.placements({"t", "other"});
  REQUIRE(placed);
  CHECK(placed->size() == 3);
  CHECK(x.d.unanswered().empty());
}

TEST_CASE("placement directory: a broker that timed out keeps its last report and is asked again only after a while",
          "[frontend][integration]") {
  directory_of_b1 x;
  x.d.refresh();
  const auto asked = x.c.net.delivered("/cluster/loads");
  // b3 is cut off, and its request fails only at the peer timeout.
  x.c.net.set_hook([&x](const std::string&, const std::string& to, const transport::request& r) {
    if (to != "b3" || r.path != "/cluster/loads") return transport::fate::deliver;
    x.now += 3000;
    return transport::fate::drop;
  });
  x.d.refresh();
  CHECK(x.d.unanswered() == std::vector<broker_id>{broker_id("b3")});
  CHECK(x.d.owner_of({"t", 2}) == broker_id("b3"));  // its last report stands
  CHECK(x.c.net.delivered("/cluster/loads") == asked + 1);  // b2 answered; b3's request was not delivered
  x.c.net.set_hook({});
  x.d.refresh();  // within retry_after: b3 is not asked
  CHECK(x.c.net.delivered("/cluster/loads") == asked + 2);
  CHECK(x.d.unanswered() == std::vector<broker_id>{broker_id("b3")});
  x.now += 5000;
  x.d.refresh();
  CHECK(x.c.net.delivered("/cluster/loads") == asked + 4);
  CHECK(x.d.unanswered().empty());
}

TEST_CASE("placement directory: a broker whose request failed at once (not listening yet) is asked again at the next "
          "refresh",
          "[frontend][integration]") {
  directory_of_b1 x;
  x.d.refresh();
  const auto asked = x.c.net.delivered("/cluster/loads");
  x.c.net.partition("b1", "b3");  // fails without a wait, as a refused connection does
  x.d.refresh();
  CHECK(x.d.unanswered() == std::vector<broker_id>{broker_id("b3")});
  x.c.net.heal();
  x.d.refresh();  // no time has passed, and b3 is asked
  CHECK(x.c.net.delivered("/cluster/loads") == asked + 3);
  CHECK(x.d.unanswered().empty());
}

TEST_CASE("placement directory: the catalog's word that a topic was deleted stands whoever is silent",
          "[frontend][integration]") {
  test::in_process_cluster c{3};
  frontend::placement_directory_options o{broker_id("b1"),
                                          {broker_id("b1"), broker_id("b2"), broker_id("b3")},
                                          [] { return std::vector<cluster::partition_load>{}; },
                                          [] { return frontend::time_ms{1000}; }};
  o.ruled_out = [](const std::string& topic, std::optional<std::int32_t> partition) {
    return topic == "gone" || (topic == "two" && partition && *partition >= 2);
  };
  frontend::placement_directory d(o, *c[1].peers);
  c.net.partition("b1", "b3");
  CHECK_FALSE(d.owner_of({"unlisted", 0}));  // a miss: every broker is asked
  REQUIRE(d.unanswered() == std::vector<broker_id>{broker_id("b3")});
  // Not served anywhere: not found (nullopt), not "retry".
  CHECK_FALSE(frontend::unplaced_while_silent(&d, "gone", 0, "gone-0"));
  CHECK_FALSE(frontend::unplaced_while_silent(&d, "gone", std::nullopt, "topic 'gone'"));
  CHECK_FALSE(frontend::unplaced_while_silent(&d, "two", 2, "two-2"));
  // What the catalog cannot rule out may be on the silent broker.
  auto maybe = frontend::unplaced_while_silent(&d, "two", 1, "two-1");
  REQUIRE(maybe);
  CHECK(maybe->code == errc::unavailable);
  CHECK_THAT(maybe->message, Catch::Contains("b3"));
  CHECK(frontend::unplaced_while_silent(&d, "unlisted", 0, "unlisted-0"));
  // A report (or a request) that still names a deleted topic's owner is not believed.
  d.learn({"gone", 0}, broker_id("b2"));
  d.learn({"two", 1}, broker_id("b2"));
  d.learn({"two", 2}, broker_id("b2"));
  CHECK_FALSE(d.owner_of({"gone", 0}));
  CHECK(d.topic_owners("gone").empty());
  CHECK(d.topic_owners("two") == std::map<std::int32_t, broker_id>{{1, broker_id("b2")}});
}

TEST_CASE("placement directory: unknown until every broker reported or the settle time passed",
          "[frontend][integration]") {
  directory_of_b1 x;
  x.c.net.partition("b1", "b3");
  x.d.refresh();
  CHECK_FALSE(x.d.known());
  x.now += 10'001;
  CHECK(x.d.known());
}

TEST_CASE("placement directory: what a request learns holds until the next refresh, and a miss refreshes, at most once a "
          "second per topic",
          "[frontend][integration]") {
  directory_of_b1 x;
  x.d.refresh();
  x.d.learn({"t", 1}, broker_id("b3"));
  CHECK(x.d.owner_of({"t", 1}) == broker_id("b3"));
  x.d.refresh();
  CHECK(x.d.owner_of({"t", 1}) == broker_id("b2"));

  // A topic made after the last refresh is found by the lookup itself.
  REQUIRE(x.c[2].store.ensure_topic("u", 1));
  const auto asked = x.c.net.delivered("/cluster/loads");
  CHECK(x.d.owner_of({"u", 0}) == broker_id("b2"));
  CHECK(x.c.net.delivered("/cluster/loads") == asked + 2);
  // A name that exists nowhere: one refresh, then none until a second has passed.
  CHECK(x.d.topic_owners("nowhere").empty());
  CHECK(x.d.topic_owners("nowhere").empty());
  CHECK(x.c.net.delivered("/cluster/loads") == asked + 4);
  // Another topic made a moment later is still found at once.
  REQUIRE(x.c[3].store.ensure_topic("v", 1));
  CHECK(x.d.owner_of({"v", 0}) == broker_id("b3"));
  CHECK(x.c.net.delivered("/cluster/loads") == asked + 6);
  x.now += 1000;
  CHECK(x.d.topic_owners("nowhere").empty());
  CHECK(x.c.net.delivered("/cluster/loads") == asked + 8);
}

TEST_CASE("placement directory: lookups that miss while a refresh runs take its picture instead of starting another",
          "[frontend][integration]") {
  directory_of_b1 x;
  x.d.refresh();
  // Each request for a report takes a while (a slow peer); eight lookups of eight unknown names arrive together.
  x.c.net.set_hook([](const std::string&, const std::string&, const transport::request& r) {
    if (r.path == "/cluster/loads") std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return transport::fate::deliver;
  });
  const auto asked = x.c.net.delivered("/cluster/loads");
  std::vector<std::thread> lookups;
  for (int i = 0; i < 8; ++i)
    lookups.emplace_back([&x, i] { (void)x.d.topic_owners("missing-" + std::to_string(i)); });
  for (auto& t : lookups) t.join();
  // Every lookup refreshed or took the picture of one that ran while it waited: far fewer rounds than lookups.
  const auto rounds = (x.c.net.delivered("/cluster/loads") - asked) / 2;
  CHECK(rounds >= 1);
  CHECK(rounds < 8);
}

TEST_CASE("placement directory: a lookup that misses while a refresh is under way takes only a picture asked for after "
          "its miss",
          "[frontend][integration]") {
  test::in_process_cluster c{2};
  frontend::time_ms now = 1'000;
  // b1's own report can be held inside a refresh, after it was read: that refresh's picture predates whatever
  // happens while it is held.
  std::mutex m;
  std::condition_variable cv;
  bool hold = false, held = false, release = false;
  auto local = [&] {
    auto loads = cluster::collect_local_loads(c[1].store, c[1].counters, *c[1].ownership, broker_id("b1"));
    std::unique_lock lock(m);
    if (hold) {
      hold = false;
      held = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    }
    return loads;
  };
  frontend::placement_directory d{
      {broker_id("b1"), {broker_id("b1"), broker_id("b2")}, local, [&now] { return now; }, 5000, 10'000, 1000},
      *c[1].peers};
  d.refresh();
  {
    std::lock_guard lock(m);
    hold = true;
  }
  std::thread refresher([&d] { d.refresh(); });
  {
    std::unique_lock lock(m);
    const bool inside = cv.wait_for(lock, std::chrono::seconds(30), [&] { return held; });
    if (!inside) {  // the refresh never read b1's report: let it go, then fail
      release = true;
      lock.unlock();
      refresher.join();
    }
    REQUIRE(inside);
  }
  // A topic made while that refresh runs, and looked up at once: the lookup must not take the running refresh's
  // picture (asked for before the topic), but one of its own.
  REQUIRE(c[1].store.ensure_topic("late", 1));
  std::optional<broker_id> found;
  std::thread lookup([&] { found = d.owner_of({"late", 0}); });
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  refresher.join();
  lookup.join();
  CHECK(found == broker_id("b1"));
}

TEST_CASE("placement directory: a fresh report wins over a silent broker's old one, which is forgotten after a while",
          "[frontend][integration]") {
  directory_of_b1 x;
  REQUIRE(x.c[2].store.ensure_topic("w", 1));
  x.d.refresh();
  CHECK(x.d.owner_of({"w", 0}) == broker_id("b2"));
  // b2 goes silent for b1 and moves t-1 to b3 meanwhile: b2's last report still names t-1, b3's fresh one too.
  x.c.net.partition("b1", "b2");
  REQUIRE(x.c.move(2, {"t", 1}, 3));
  x.d.refresh();
  CHECK(x.d.unanswered() == std::vector<broker_id>{broker_id("b2")});
  CHECK(x.d.owner_of({"t", 1}) == broker_id("b3"));
  CHECK(x.d.owner_of({"w", 0}) == broker_id("b2"));  // nobody else says otherwise: its last word stands
  x.now += 60'001;
  x.d.refresh();
  CHECK_FALSE(x.d.owner_of({"w", 0}));
  CHECK(x.d.owner_of({"t", 0}) == broker_id("b1"));
}
