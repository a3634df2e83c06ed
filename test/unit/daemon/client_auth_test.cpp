// moonmqd's client API roles: which route needs which role, and how a request is judged.
#include <catch2/catch.hpp>

#include "client_auth.hpp"

using namespace moonmq;
using moonmq::daemon::role;
using moonmq::daemon::role_needed;

TEST_CASE("client auth: reads and a client's data need client, every other write needs admin", "[auth]") {
  CHECK_FALSE(role_needed("GET", "/v1/health"));
  CHECK_FALSE(role_needed("GET", "/metrics"));
  CHECK_FALSE(role_needed("HEAD", "/livez"));
  CHECK_FALSE(role_needed("GET", "/ui/console.js"));
  // Only reads are open: any other method on an open path needs a token like every write.
  CHECK(role_needed("POST", "/livez") == role::admin);
  CHECK(role_needed("PUT", "/metrics") == role::admin);
  CHECK(role_needed("POST", "/ui/index.html") == role::admin);
  CHECK(role_needed("GET", "/v1/topics") == role::client);
  CHECK(role_needed("HEAD", "/v1/cluster") == role::client);
  CHECK(role_needed("POST", "/v1/topics/orders/records") == role::client);
  CHECK(role_needed("POST", "/v1/groups/g/offsets") == role::client);
  CHECK(role_needed("POST", "/v1/groups/g/join") == role::client);
  CHECK(role_needed("POST", "/v1/transactions/t/commit") == role::client);
  CHECK(role_needed("POST", "/v1/topics") == role::admin);
  CHECK(role_needed("POST", "/v1/topics/orders/partitions") == role::admin);
  CHECK(role_needed("POST", "/v1/reassignments") == role::admin);
  CHECK(role_needed("PUT", "/v1/reassignments/throttle") == role::admin);
  CHECK(role_needed("DELETE", "/v1/reassignments/7") == role::admin);
  CHECK(role_needed("POST", "/v1/brokers/b2/drain") == role::admin);
  CHECK(role_needed("DELETE", "/v1/groups/g") == role::admin);  // not listed as a client's write
  CHECK(role_needed("PUT", "/v1/anything-new") == role::admin);
}

TEST_CASE("client auth: a request is judged by its bearer token and role", "[auth]") {
  cluster::auth_config c;
  c.tokens = {{"app", "client-token-0123456789", "client"}, {"ops", "admin-token-0123456789ab", "admin"}};
  daemon::client_auth open(std::nullopt);
  CHECK(open.judge("POST", "/v1/topics", "").status == 200);
  daemon::client_auth auth(c);
  CHECK(auth.judge("GET", "/v1/health", "").status == 200);
  CHECK(auth.judge("GET", "/v1/topics", "").status == 401);
  CHECK(auth.judge("GET", "/v1/topics", "Basic abc").status == 401);
  CHECK(auth.judge("GET", "/v1/topics", "Bearer client-token-012345678").status == 401);  // a prefix is not the token
  CHECK(auth.judge("GET", "/v1/topics", "Bearer client-token-0123456789").status == 200);
  auto forbidden = auth.judge("POST", "/v1/topics", "Bearer client-token-0123456789");
  CHECK(forbidden.status == 403);
  CHECK_THAT(forbidden.message, Catch::Contains("needs the admin role"));
  CHECK(auth.judge("POST", "/v1/topics", "Bearer admin-token-0123456789ab").status == 200);
}
