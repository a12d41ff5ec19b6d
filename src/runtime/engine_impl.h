// What an Engine holds (engine.h), shared by engine.cpp and session.cpp: the loaded model, its
// expert store, the backend and the layer loop, and the one-forward-at-a-time rule sessions keep.
#pragma once

#include <strata/engine.h>
#include <strata/session.h>

#include <mutex>

#include "backend/backend.h"
#include "model/transformer.h"
#include "runtime/expert_usage.h"
#include "runtime/session_loader.h"

namespace strata {

struct Engine::Impl {
  SessionOptions options;  // resolved: threads, context and policy filled in
  LoadedSession loaded;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Transformer> transformer;
  ExpertUsage usage;  // of every session, for the warm-start file

  // Forward passes of the engine's sessions run one at a time (the store, the backend's scratch
  // and the layer loop's observers serve one batch); a session holds this for each feed.
  std::mutex forward;
  // While a forward runs (forward held): whose it is, where its batch starts, and whether it is
  // a single-token step. The observers report to that session's callbacks.
  struct Forward {
    const Session::RouteCallback* route = nullptr;
    int64_t batch_start = 0;
    bool decoding = false;
  } running;
  std::mutex sessions;
  int open_sessions = 0;  // under `sessions`: KV caches handed out, at most options.sessions

  Impl(const SessionOptions& o, LoadedSession l)
      : options(o),
        loaded(std::move(l)),
        usage(int(loaded.model->config().n_layer), int(loaded.model->config().n_expert)) {}
  const Model& model() const { return *loaded.model; }
  const runtime::Tokenizer& tokenizer() const { return *loaded.tokenizer; }
  void note(std::string_view line) const {
    if (options.on_note) options.on_note(NoteKind::kWarning, line);
  }
};

}  // namespace strata
