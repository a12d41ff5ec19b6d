// strata serve -m MODEL: the OpenAI-compatible HTTP server (src/server/). One engine, --parallel
// sessions decoding together, a bounded queue beyond them; the process runs until Ctrl-C or
// SIGTERM, which stop it after the replies in progress are cancelled.
#include <strata/engine.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/interrupt.h"
#include "server/http_server.h"
#include "server/scheduler.h"
#include "tools/command.h"
#include "tools/output_files.h"
#include "tools/session_flags.h"

namespace strata::tools {
namespace {

struct ServeFlags {
  SessionFlags session;
  server::ServerOptions server;
  int parallel = 1;
  int queue = 16;
};

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.starts_with("127.");
}

int serve(const ServeFlags& flags) {
  if (flags.server.api_key.empty() && !is_loopback(flags.server.host))
    return report_failure(Status::errorf(
        "--host {}: a server reachable from other machines needs --api-key", flags.server.host));
  const Status warm_file =
      CommandInputs().add_session(flags.session.options).check_outputs({}, false);
  if (!warm_file.ok()) return report_failure(warm_file);
  ServeFlags resolved = flags;
  if (const Status status = resolve_session_flags(resolved.session); !status.ok())
    return report_failure(status);
  resolved.session.options.sessions = flags.parallel;
  const auto engine = Engine::open(resolved.session.options);
  if (!engine.ok()) return report_failure(engine.status());
  server::ServerMetrics metrics;
  auto scheduler = server::Scheduler::start(engine.value(), flags.parallel, size_t(flags.queue),
                                            resolved.session.options.prefill_chunk, metrics);
  if (!scheduler.ok()) return report_failure(scheduler.status());
  server::ServerOptions options = resolved.server;
  if (options.model_name.empty())
    options.model_name = std::filesystem::path(flags.session.options.model_path).stem().string();
  // A thread for each request that may wait or stream at once, and a few for the quick ones.
  options.http_threads = flags.parallel + flags.queue + 4;
  server::HttpServer http(*scheduler.value(), metrics, options);
  if (const Status bound = http.bind(); !bound.ok()) return report_failure(bound);
  std::fprintf(
      stderr, "strata serve: listening on http://%s:%d (model %s, %d parallel, queue %d)\n",
      options.host.c_str(), http.port(), options.model_name.c_str(), flags.parallel, flags.queue);
  std::atomic<bool> served{false};
  std::thread watcher([&] {
    while (!served && !interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    http.stop();
  });
  const Status listened = http.listen();
  served = true;
  watcher.join();
  scheduler.value().reset();  // cancels what is still running before the engine goes
  if (interrupted()) {
    std::fputs("strata serve: stopped\n", stderr);
    return 0;
  }
  return listened.ok() ? 0 : report_failure(listened);
}

}  // namespace

void add_serve_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  auto flags = std::make_shared<ServeFlags>();
  add_session_flags(command, flags->session);
  server::ServerOptions& server = flags->server;
  command->add_option("--host", server.host, "address to listen on")->default_str("127.0.0.1");
  command->add_option("--port", server.port, "TCP port (0: any free one)")
      ->default_str("8080")
      ->check(CLI::Range(0, 65535));
  command
      ->add_option("--parallel", flags->parallel,
                   "conversations decoded together, each with its own KV cache of --ctx tokens")
      ->check(CLI::Range(1, 64));
  command->add_option("--queue", flags->queue, "requests that may wait beyond --parallel")
      ->check(CLI::Range(0, 4096));
  command->add_option("--api-key", server.api_key,
                      "required as 'Authorization: Bearer KEY' (needed for a non-loopback --host)");
  command->add_option("--alias", server.model_name, "the model's name in the API")
      ->default_str("the file's name");
  command
      ->add_option("--max-tokens", server.limits.max_tokens,
                   "most tokens a request may ask for (and its default)")
      ->check(CLI::Range(1, 1 << 20));
  command->callback([&action, flags] { action = [flags] { return serve(*flags); }; });
}

}  // namespace strata::tools
