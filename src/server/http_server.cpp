#include "server/http_server.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <chrono>
#include <random>

#include "server/openai_objects.h"
#include "server/reply_channel.h"
#include "server/web_page.h"

namespace strata::server {
namespace {

using nlohmann::json;

void send_error(httplib::Response& res, int status, std::string_view message,
                std::string_view type = "invalid_request_error", std::string_view code = {}) {
  res.status = status;
  res.set_content(error_body(message, type, code), "application/json");
}

void send_json(httplib::Response& res, const json& value) {
  res.set_content(value.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// Equal strings in time that depends on their lengths only.
bool same_key(std::string_view given, std::string_view key) {
  unsigned char differ = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    differ |= uint8_t(given[i]) ^ uint8_t(key.empty() ? 0 : key[i % key.size()]);
  return differ == 0;
}

// The label /metrics counts a response under: the endpoints, else "other" (paths a client
// makes up must not grow the metrics without bound).
std::string endpoint_label(const std::string& path) {
  for (const char* known : {"/", "/health", "/metrics", "/arena", "/v1/models",
                            "/v1/chat/completions", "/v1/completions"})
    if (path == known) return path;
  return "other";
}

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string reply_id(const char* prefix) {
  static std::mt19937_64 ids{std::random_device{}()};
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  return fmt::format("{}-{:016x}", prefix, ids());
}

uint64_t random_seed() {
  static std::random_device device;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  return (uint64_t(device()) << 32) | device();
}

// A generation however it was asked for: a chat's or a text completion's.
struct Reply {
  bool chat = false;
  ReplyHeader header;
  Sampling sampling;
  std::vector<int32_t> prompt;
};

// The events of a streamed reply, written as the text arrives; false when the client has gone.
bool stream_reply(const Reply& reply, ReplyChannel& channel, httplib::DataSink& sink,
                  ServerMetrics& metrics) {
  const auto send = [&](const json& value) {
    const std::string text = event(value);
    return sink.write(text.data(), text.size());
  };
  if (reply.chat &&
      !send(chat_chunk(reply.header, {{"role", "assistant"}, {"content", ""}}, std::nullopt)))
    return false;
  for (;;) {
    const std::string text = channel.take_text();
    if (text.empty()) break;
    const json chunk = reply.chat ? chat_chunk(reply.header, {{"content", text}}, std::nullopt)
                                  : text_completion(reply.header, text, std::nullopt);
    if (!send(chunk)) return false;
  }
  const GenerationOutcome& outcome = *channel.done();
  if (!outcome.status.ok()) {
    if (!send(json::parse(error_body(outcome.status.message(), "server_error")))) return false;
  } else {
    const std::string finish = finish_reason(outcome);
    if (!send(reply.chat ? chat_chunk(reply.header, json::object(), finish)
                         : text_completion(reply.header, "", finish)))
      return false;
    if (reply.sampling.include_usage && !send(usage_chunk(reply.header, reply.chat, outcome)))
      return false;
  }
  static constexpr std::string_view kDone = "data: [DONE]\n\n";
  if (!sink.write(kDone.data(), kDone.size())) return false;
  metrics.record_request({outcome.prompt_tokens, outcome.reused_prompt_tokens,
                          outcome.completion_tokens, channel.seconds(),
                          channel.first_text_seconds()});
  sink.done();
  return true;
}

// The whole reply in one response.
void send_reply(const Reply& reply, ReplyChannel& channel, httplib::Response& res,
                ServerMetrics& metrics) {
  std::string text;
  for (std::string piece; !(piece = channel.take_text()).empty();) text += piece;
  const GenerationOutcome& outcome = *channel.done();
  if (!outcome.status.ok()) return send_error(res, 500, outcome.status.message(), "server_error");
  metrics.record_request({outcome.prompt_tokens, outcome.reused_prompt_tokens,
                          outcome.completion_tokens, channel.seconds(),
                          channel.first_text_seconds()});
  if (reply.chat) return send_json(res, chat_completion(reply.header, text, outcome));
  json body = text_completion(reply.header, text, finish_reason(outcome));
  body["usage"] = usage_object(outcome);
  send_json(res, body);
}

// Queues the generation and answers with it, streamed or whole.
void generate(const Reply& reply, Scheduler& scheduler, ServerMetrics& metrics,
              httplib::Response& res) {
  const Engine& engine = scheduler.engine();
  if (int64_t(reply.prompt.size()) >= engine.n_ctx())
    return send_error(res, 400,
                      fmt::format("the prompt has {} tokens; the context holds {} (--ctx), and "
                                  "a reply needs at least one more",
                                  reply.prompt.size(), engine.n_ctx()),
                      "invalid_request_error", "context_length_exceeded");
  GenerateOptions options;
  options.max_tokens = reply.sampling.max_tokens;
  options.temperature = reply.sampling.temperature;
  options.top_p = reply.sampling.top_p;
  options.seed = reply.sampling.seed ? *reply.sampling.seed : random_seed();
  auto channel = std::make_shared<ReplyChannel>();
  GenerationJob job{
      .prompt = reply.prompt,
      .options = options,
      .stop = reply.sampling.stop,
      .on_text = [channel](std::string_view text) { return channel->push_text(text); },
      .on_done = [channel](const GenerationOutcome& outcome) { channel->finish(outcome); }};
  if (!scheduler.submit(std::move(job))) {
    res.set_header("Retry-After", "1");
    return send_error(res, 503, "the server is busy: its queue is full; retry later",
                      "server_error", "server_busy");
  }
  if (!reply.sampling.stream) return send_reply(reply, *channel, res, metrics);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [reply, channel, &metrics](size_t, httplib::DataSink& sink) {
        return stream_reply(reply, *channel, sink, metrics);
      },
      // Done or the client gone: a generation still running stops at its next token.
      [channel](bool) { channel->close(); });
}

Result<Reply> chat_reply(const std::string& body, const Engine& engine,
                         const ServerOptions& options) {
  STRATA_ASSIGN_OR_RETURN(ChatRequest request, parse_chat_request(body, options.limits));
  Reply reply{.chat = true,
              .header = {reply_id("chatcmpl"), unix_time(), options.model_name},
              .sampling = request.sampling};
  STRATA_ASSIGN_OR_RETURN(reply.prompt, engine.chat_prompt(request.messages));
  return reply;
}

Result<Reply> completion_reply(const std::string& body, const Engine& engine,
                               const ServerOptions& options) {
  STRATA_ASSIGN_OR_RETURN(CompletionRequest request,
                          parse_completion_request(body, options.limits));
  Reply reply{.chat = false,
              .header = {reply_id("cmpl"), unix_time(), options.model_name},
              .sampling = request.sampling};
  reply.prompt = engine.tokenize(request.prompt);
  return reply;
}

// The arena as the page draws it: per layer a string of 0/1 (resident experts), the expert
// counters and the throughput totals; the page takes rates from successive readings.
json arena_state(const Scheduler& scheduler, const ServerMetrics& metrics) {
  const Engine& engine = scheduler.engine();
  const std::vector<uint8_t> residency = scheduler.residency();
  const size_t n_expert = size_t(engine.n_experts());
  json layers = json::array();
  for (size_t first = 0; first + n_expert <= residency.size(); first += n_expert) {
    std::string row(n_expert, '0');
    for (size_t e = 0; e < n_expert; ++e)
      if (residency[first + e]) row[e] = '1';
    layers.push_back(row);
  }
  const EngineGauges gauges = metrics.engine();
  const Throughput totals = metrics.throughput();
  json counters = json::object();
  for_each_expert_counter(
      [&](const char* name, auto member) { counters[name] = gauges.experts.*member; });
  return {{"layers", layers},
          {"resident_experts", gauges.resident_experts},
          {"total_experts", gauges.total_experts},
          {"active_sequences", gauges.active_sequences},
          {"parallel", gauges.parallel},
          {"queued_requests", gauges.queued_requests},
          {"kv_tokens", gauges.kv_tokens},
          {"kv_capacity", gauges.kv_capacity},
          {"experts", counters},
          {"decode_tokens", totals.decode_tokens},
          {"decode_seconds", totals.decode_seconds},
          {"prefill_tokens", totals.prefill_tokens},
          {"prefill_seconds", totals.prefill_seconds},
          {"generated_tokens", totals.generated_tokens}};
}

}  // namespace

HttpServer::HttpServer(Scheduler& scheduler, ServerMetrics& metrics, ServerOptions options)
    : scheduler_(scheduler),
      metrics_(metrics),
      options_(std::move(options)),
      started_(unix_time()),
      http_(std::make_unique<httplib::Server>()) {
  add_routes();
}

HttpServer::~HttpServer() = default;

Status HttpServer::bind() {
  port_ = options_.port == 0
              ? http_->bind_to_any_port(options_.host)
              : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port_ < 0)
    return Status::errorf("{}:{}: cannot listen there (address in use, or not this machine's)",
                          options_.host, options_.port);
  return Status();
}

Status HttpServer::listen() {
  if (!http_->listen_after_bind())
    return Status::errorf("{}:{}: the server stopped listening", options_.host, port_);
  return Status();
}

void HttpServer::stop() { http_->stop(); }

void HttpServer::add_routes() {
  const int threads = options_.http_threads > 0 ? options_.http_threads : 16;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  http_->set_payload_max_length(options_.limits.max_body_bytes);
  http_->set_read_timeout(30);
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count_response(endpoint_label(req.path), res.status);
  });
  // Every error answers with an OpenAI error object, including httplib's own (404, 413, ...).
  http_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string message =
        res.status == 404   ? fmt::format("no endpoint {} {}", req.method, req.path)
        : res.status == 413 ? std::string("the request body is larger than this server takes")
                            : fmt::format("HTTP {}", res.status);
    send_error(res, res.status, message);
  });
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (options_.api_key.empty() || req.path == "/" || req.path == "/health")
      return httplib::Server::HandlerResponse::Unhandled;
    const std::string given = req.get_header_value("Authorization");
    const std::string_view prefix = "Bearer ";
    if (given.starts_with(prefix) &&
        same_key(std::string_view(given).substr(prefix.size()), options_.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 401, "a valid API key is required (Authorization: Bearer KEY)",
               "invalid_request_error", "invalid_api_key");
    return httplib::Server::HandlerResponse::Handled;
  });
  add_api_routes();
}

void HttpServer::add_api_routes() {
  http_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(web_page()), "text/html; charset=utf-8");
  });
  http_->Get("/health", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"status", "ok"}});
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(), "text/plain; version=0.0.4");
  });
  http_->Get("/arena", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, arena_state(scheduler_, metrics_));
  });
  http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, model_list(options_.model_name, started_, scheduler_.engine().n_ctx()));
  });
  const auto generation = [this](auto make_reply) {
    return [this, make_reply](const httplib::Request& req, httplib::Response& res) {
      const Result<Reply> reply = make_reply(req.body, scheduler_.engine(), options_);
      if (!reply.ok()) return send_error(res, 400, reply.status().message());
      generate(reply.value(), scheduler_, metrics_, res);
    };
  };
  http_->Post("/v1/chat/completions", generation(chat_reply));
  http_->Post("/v1/completions", generation(completion_reply));
}

}  // namespace strata::server
