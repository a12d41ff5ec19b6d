// The HTTP side of `strata serve` (cpp-httplib): the OpenAI endpoints, /health, /metrics, the
// arena's state for the page, the page itself, API-key checks and limits. Generation runs on
// the Scheduler; each request waits for its reply on a ReplyChannel, or streams it as
// server-sent events.
//
// Thread-safety: listen() blocks on the calling thread; stop() may be called from any thread.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <string>

#include "server/api_request.h"
#include "server/scheduler.h"
#include "server/server_metrics.h"

namespace httplib {
class Server;
}

namespace strata::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;         // 0: any free port (port() says which)
  std::string api_key;     // empty: none asked
  std::string model_name;  // what /v1/models lists and replies name
  RequestLimits limits;
  int http_threads = 0;  // 0: parallel + queue + 4 (each waiting or streaming request holds one)
};

class HttpServer {
 public:
  HttpServer(Scheduler& scheduler, ServerMetrics& metrics, ServerOptions options);
  ~HttpServer();

  // Binds the address; an error names it ("127.0.0.1:8080: address in use").
  Status bind();
  int port() const { return port_; }
  // Serves until stop().
  Status listen();
  void stop();

 private:
  void add_routes();  // and what every request passes: limits, the key, error bodies
  void add_api_routes();
  Scheduler& scheduler_;
  ServerMetrics& metrics_;
  ServerOptions options_;
  int port_ = 0;
  int64_t started_ = 0;  // Unix time, for "created"
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace strata::server
