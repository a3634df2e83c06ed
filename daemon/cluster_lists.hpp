// The client API's cluster-wide lists (`GET /v1/groups?scope=cluster`, `GET /v1/transactions?scope=cluster`): this
// broker's part and every peer's, asked at once over the cluster link (`/cluster/group/list`, `/cluster/txn/list`),
// merged into one answer in which every entry names its coordinator, and every broker says whether it answered (with
// its error as a structured field when it did not). An operator asks any broker and sees the whole cluster.
// Thread safety: every method may be called concurrently.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <tuple>
#include <vector>

#include "cluster_view.hpp"

namespace moonmq::daemon {

class cluster_lists {
 public:
  explicit cluster_lists(cluster_view& view) : view_(view) {}

  /// {"groups":[{"group","coordinator"}], "brokers":[{"id","answered","error"?}]}, `own` being this broker's
  /// {"coordinator","groups":[names]}.
  std::string groups(const std::string& own);
  /// {"transactions":[{..., "coordinator"}], "brokers":[...]}, `own` being this broker's /cluster/txn/list answer.
  std::string transactions(const std::string& own);

 private:
  struct part {
    std::string broker;
    std::string body;  ///< the broker's own list (a JSON object), when it answered
    int status = 0;    ///< 0: no answer
  };
  /// This broker's part, then every peer's `path`.
  std::vector<part> ask_all(const std::string& own, const std::string& path);
  /// Each part as the response it was.
  static std::vector<transport::response> responses_of(const std::vector<part>& parts);
  /// Each part's broker, status and parsed body.
  static std::tuple<std::vector<std::string>, std::vector<int>, std::vector<rapidjson::Document>> read(
      const std::vector<part>& parts);

  cluster_view& view_;
};

}  // namespace moonmq::daemon
