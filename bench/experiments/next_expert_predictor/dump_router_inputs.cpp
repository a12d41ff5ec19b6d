// Experiment: per token and layer, the router input (normed x) of a teacher-forced pass.
// dump_router_inputs MODEL TOKENS.json OUT.bin  -> header n_tok n_layer n_embd n_expert, routers
// [L][E][D], inputs [L][T][D]
#include <cstdio>
#include <fstream>
#include <sstream>
#include "cpu/cpu_backend.h"
#include "experts/resident_expert_store.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "model/transformer.h"
using namespace strata;
int main(int argc, char** argv) {
  std::ifstream in(argv[2]);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  std::vector<int32_t> tokens;
  long v = 0;
  bool num = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      v = v * 10 + (c - '0');
      num = true;
    } else {
      if (num) tokens.push_back(int32_t(v));
      v = 0;
      num = false;
    }
  }
  if (tokens.size() > 1024) tokens.resize(1024);
  auto file = gguf::GgufFile::open(argv[1]).value();
  auto model = Model::load(file).value();
  const auto& cfg = model->config();
  ResidentExpertStore store(model->weights().experts);
  const auto backend = make_cpu_backend(cfg, model->weight_formats(), 2).value();
  Transformer tr(model, store, *backend);
  std::vector<std::vector<float>> inputs(size_t(cfg.n_layer));
  tr.set_router_input_observer([&](int layer, int64_t, std::span<const float> x) {
    inputs[size_t(layer)].assign(x.begin(), x.end());
  });
  const auto cache = backend->make_kv_cache(int64_t(tokens.size())).value();
  std::vector<float> logits;
  if (!tr.forward(tokens, 0, *cache, false, logits).ok()) return 1;
  FILE* f = fopen(argv[3], "wb");
  int32_t hdr[4] = {int32_t(tokens.size()), int32_t(cfg.n_layer), int32_t(cfg.n_embd),
                    int32_t(cfg.n_expert)};
  fwrite(hdr, 4, 4, f);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const auto& r = model->weights().layers[size_t(l)].router;
    fwrite(r.data, 4, size_t(r.n_in * r.n_out), f);
  }
  for (int l = 0; l < cfg.n_layer; ++l)
    fwrite(inputs[size_t(l)].data(), 4, inputs[size_t(l)].size(), f);
  fclose(f);
  fprintf(stderr, "%zu tokens\n", tokens.size());
}
