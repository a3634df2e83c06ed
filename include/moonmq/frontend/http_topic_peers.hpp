// The topic admin front end's reach to the other brokers in moonmqd: the /cluster/admin/topics/* routes (their
// bodies in frontend/topic_wire.hpp), GET /cluster/loads and GET /cluster/owner, every peer asked at once.
// Thread safety: every method may be called concurrently, from threads that may block.
#pragma once

#include <string>
#include <vector>

#include "moonmq/transport/peer_client.hpp"
#include "moonmq/frontend/topic_admin.hpp"

namespace moonmq::frontend {

class http_topic_peers final : public topic_peers {
 public:
  http_topic_peers(transport::peer_client& client, std::vector<std::string> peers)
      : client_(client), peers_(std::move(peers)) {}

  std::vector<topic_holding> holdings(const std::string& name, std::uint32_t partitions) override;
  outcome<topic_decision> forward(const broker_id& coordinator, const topic_admin_request& r) override;
  std::vector<std::string> tell(const cluster::topic_record& r) override;
  std::vector<std::pair<broker_id, cluster::topic_catalog>> catalogs() override;
  std::vector<peer_serving> serving() override;
  result<std::optional<cluster::ownership_entry>> own_entry(const broker_id& peer, const topic_partition& tp) override;
  status claim(const broker_id& peer, const topic_claim& c) override;

 private:
  transport::peer_client& client_;
  std::vector<std::string> peers_;
};

}  // namespace moonmq::frontend
