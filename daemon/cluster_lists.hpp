// The client API's cluster-wide lists (`GET /v1/groups?scope=cluster`, `GET /v1/transactions?scope=cluster`): this
// broker's part and every peer's, asked at once over the cluster link (`/cluster/group/list`, `/cluster/txn/list`),
// merged into one answer in which every entry names its coordinator, and every broker says whether it answered (with
// its error as a structured field when it did not). An operator asks any broker and sees the whole cluster.
// Lists are paged by name (`after`, `limit`; transport/list_page.hpp): every broker is asked for one page, the
// merged answer holds the first `limit` names of all of them, and `next` names the one to ask after when more remain.
// Thread safety: every method may be called concurrently.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <tuple>
#include <vector>

#include "cluster_view.hpp"
#include "moonmq/transport/list_page.hpp"

namespace httplib {
struct Request;
}

namespace moonmq::daemon {

class cluster_lists {
 public:
  explicit cluster_lists(cluster_view& view) : view_(view) {}

  /// The page a client API request asks for (`after`, `limit`); invalid_argument for a bad limit.
  static result<transport::list_page> page_of(const httplib::Request& req);

  /// {"groups":[{"group","coordinator"}], "brokers":[{"id","answered","error"?}], "next"?}, `own` being this
  /// broker's page of /cluster/group/list.
  std::string groups(const std::string& own, const transport::list_page& page);
  /// {"transactions":[{..., "coordinator"}], "brokers":[...], "next"?}, `own` being this broker's page of
  /// /cluster/txn/list.
  std::string transactions(const std::string& own, const transport::list_page& page);

 private:
  struct part {
    std::string broker;
    std::string body;  ///< the broker's own list (a JSON object), when it answered
    int status = 0;    ///< 0: no answer
  };
  /// This broker's part, then every peer's `path` (one `page`).
  std::vector<part> ask_all(const std::string& own, const std::string& path, const transport::list_page& page);
  /// Each part as the response it was.
  static std::vector<transport::response> responses_of(const std::vector<part>& parts);
  /// Each part's broker, status and parsed body.
  static std::tuple<std::vector<std::string>, std::vector<int>, std::vector<rapidjson::Document>> read(
      const std::vector<part>& parts);

  cluster_view& view_;
};

}  // namespace moonmq::daemon
