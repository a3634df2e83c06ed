// moonmqd's client routes for data: produce, fetch, and committed group offsets (topics: topic_api.hpp). Each route
// decodes the request, calls its front end (include/moonmq/frontend/) and encodes the answer.
//   POST /v1/topics/{t}/records                                           produce, routed to the owner (also of a
//                                                                         topic this broker has never had)
//   GET  /v1/topics/{t}/partitions/{p}/records                            fetch (421 with the owner elsewhere)
//   POST /v1/groups/{g}/offsets · GET /v1/groups/{g}/offsets              commit / read at the partition's owner
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include "moonmq/frontend/fetch.hpp"
#include "moonmq/frontend/offsets.hpp"
#include "moonmq/frontend/produce.hpp"

namespace moonmq::daemon {

/// The front ends the routes call (owned by the broker, which outlives the routes).
struct record_api_parts {
  frontend::produce_frontend* produce;
  frontend::fetch_frontend* fetch;
  frontend::offsets_frontend* offsets;
};

class record_api {
 public:
  explicit record_api(const record_api_parts& p) : produce_(*p.produce), fetch_(*p.fetch), offsets_(*p.offsets) {}

  void routes(api_routes& api);

 private:
  void produce(const httplib::Request& req, httplib::Response& res);
  void fetch(const httplib::Request& req, httplib::Response& res);
  void commit(const httplib::Request& req, httplib::Response& res);
  void committed(const httplib::Request& req, httplib::Response& res);

  frontend::produce_frontend& produce_;
  frontend::fetch_frontend& fetch_;
  frontend::offsets_frontend& offsets_;
};

}  // namespace moonmq::daemon
